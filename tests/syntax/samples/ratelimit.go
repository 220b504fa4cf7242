// Package ratelimit implements a token bucket shared by HTTP handlers.
package ratelimit

import (
	"errors"
	"net/http"
	"sync"
	"time"
)

const DefaultBurst = 10

var ErrLimited = errors.New("rate limited")

// Bucket refills at a fixed rate up to its burst size.
type Bucket struct {
	mu     sync.Mutex
	tokens float64
	burst  float64
	rate   float64
	last   time.Time
}

type Clock func() time.Time

// NewBucket returns a full bucket.
func NewBucket(rate float64, burst int) *Bucket {
	return &Bucket{tokens: float64(burst), burst: float64(burst), rate: rate, last: time.Now()}
}

// Take removes one token, or reports ErrLimited when none is left.
func (b *Bucket) Take(now time.Time) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	elapsed := now.Sub(b.last).Seconds()
	b.tokens = min(b.burst, b.tokens+elapsed*b.rate)
	b.last = now
	if b.tokens < 1 {
		return ErrLimited
	}
	b.tokens--
	return nil
}

func Middleware(b *Bucket, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch err := b.Take(time.Now()); {
		case errors.Is(err, ErrLimited):
			http.Error(w, "slow down", http.StatusTooManyRequests)
		default:
			next.ServeHTTP(w, r)
		}
	})
}

var limits = map[string]int{
	"/login":  3,
	"/search": 20,
}
