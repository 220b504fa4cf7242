// Package ratelimit implements a token bucket rate limiter.
package ratelimit

import (
	"sync"
	"time"
)

// Bucket allows up to Burst events at once and Rate events per second on average.
type Bucket struct {
	mu     sync.Mutex
	rate   float64
	burst  float64
	tokens float64
	last   time.Time
	now    func() time.Time
}

// New returns a full bucket.
func New(rate float64, burst int) *Bucket {
	return &Bucket{rate: rate, burst: float64(burst), tokens: float64(burst), now: time.Now, last: time.Now()}
}

func (b *Bucket) refill() {
	now := b.now()
	elapsed := now.Sub(b.last).Seconds()
	b.last = now
	b.tokens += elapsed * b.rate
	if b.tokens > b.burst {
		b.tokens = b.burst
	}
}

// Allow reports whether an event may happen now and takes a token if so.
func (b *Bucket) Allow() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill()
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// Wait returns how long to wait before the next event would be allowed.
func (b *Bucket) Wait() time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill()
	if b.tokens >= 1 {
		return 0
	}
	missing := 1 - b.tokens
	return time.Duration(missing / b.rate * float64(time.Second))
}
