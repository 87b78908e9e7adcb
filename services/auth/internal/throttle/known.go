package throttle

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Known remembers keys for a while (for sign-in: an account together with an
// address it signed in from), so that a limit can spare them.
type Known struct {
	rdb    redis.UniversalClient
	prefix string
	ttl    time.Duration
}

// NewKnown returns a memory named prefix that keeps a key for ttl after it
// was last added.
func NewKnown(rdb redis.UniversalClient, prefix string, ttl time.Duration) *Known {
	return &Known{rdb: rdb, prefix: "auth:known:" + prefix + ":", ttl: ttl}
}

// Has reports whether key was added within the ttl.
func (k *Known) Has(ctx context.Context, key string) (bool, error) {
	n, err := k.rdb.Exists(ctx, k.prefix+key).Result()
	if err != nil {
		return false, fmt.Errorf("looking up a known key: %w", err)
	}
	return n > 0, nil
}

// Add remembers key for the ttl from now.
func (k *Known) Add(ctx context.Context, key string) error {
	if err := k.rdb.Set(ctx, k.prefix+key, 1, k.ttl).Err(); err != nil {
		return fmt.Errorf("remembering a known key: %w", err)
	}
	return nil
}
