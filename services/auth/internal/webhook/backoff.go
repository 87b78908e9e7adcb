package webhook

import (
	"math/rand/v2"
	"time"
)

// Backoff is the delay before the next attempt after attempt failed ones:
// full jitter (a uniform draw from zero to the ceiling) over an exponential
// ceiling, base doubled per failed attempt, at most max. Jitter spreads the
// retries of many deliveries that failed together (an endpoint's outage).
func Backoff(attempt int, base, max time.Duration) time.Duration {
	return backoff(attempt, base, max, rand.Int64N)
}

// backoff is Backoff with the random draw given (tests).
func backoff(attempt int, base, max time.Duration, draw func(n int64) int64) time.Duration {
	return time.Duration(draw(int64(ceiling(attempt, base, max)) + 1))
}

// ceiling is base·2^(attempt-1), at most max.
func ceiling(attempt int, base, max time.Duration) time.Duration {
	c := base
	for i := 1; i < attempt && c < max; i++ {
		c *= 2
	}
	return min(c, max)
}
