/* Parses "key = value" configuration lines with comments. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_KEY 64
#define MAX_VALUE 256

struct config_entry {
    char key[MAX_KEY];
    char value[MAX_VALUE];
};

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    char *end = s + strlen(s);
    while (end > s && isspace((unsigned char)end[-1]))
        *--end = '\0';
    return s;
}

int parse_line(const char *line, struct config_entry *out)
{
    char buffer[MAX_KEY + MAX_VALUE + 8];
    if (strlen(line) >= sizeof(buffer))
        return -1;
    strcpy(buffer, line);
    char *hash = strchr(buffer, '#');
    if (hash)
        *hash = '\0';
    char *text = trim(buffer);
    if (*text == '\0')
        return 0;
    char *equals = strchr(text, '=');
    if (!equals)
        return -1;
    *equals = '\0';
    char *key = trim(text);
    char *value = trim(equals + 1);
    if (strlen(key) >= MAX_KEY || strlen(value) >= MAX_VALUE)
        return -1;
    strcpy(out->key, key);
    strcpy(out->value, value);
    return 1;
}

int load_config(FILE *f, struct config_entry *entries, int max_entries)
{
    char line[512];
    int count = 0;
    while (fgets(line, sizeof(line), f) && count < max_entries) {
        int r = parse_line(line, &entries[count]);
        if (r < 0)
            return -1;
        count += r;
    }
    return count;
}
