// Command wordcount prints the most frequent words of its input.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"unicode"
)

type wordCount struct {
	word  string
	count int
}

func countWords(scanner *bufio.Scanner) map[string]int {
	counts := make(map[string]int)
	for scanner.Scan() {
		fields := strings.FieldsFunc(scanner.Text(), func(r rune) bool {
			return !unicode.IsLetter(r) && r != '\''
		})
		for _, field := range fields {
			counts[strings.ToLower(field)]++
		}
	}
	return counts
}

func topWords(counts map[string]int, n int) []wordCount {
	result := make([]wordCount, 0, len(counts))
	for word, count := range counts {
		result = append(result, wordCount{word, count})
	}
	sort.Slice(result, func(i, j int) bool {
		if result[i].count != result[j].count {
			return result[i].count > result[j].count
		}
		return result[i].word < result[j].word
	})
	if len(result) > n {
		result = result[:n]
	}
	return result
}

func main() {
	top := flag.Int("n", 10, "how many words to print")
	flag.Parse()
	scanner := bufio.NewScanner(os.Stdin)
	for _, wc := range topWords(countWords(scanner), *top) {
		fmt.Printf("%7d %s\n", wc.count, wc.word)
	}
	if err := scanner.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "wordcount:", err)
		os.Exit(1)
	}
}
