// Package password hashes and verifies user passwords with argon2id, stored as
// PHC strings ($argon2id$v=19$m=...,t=...,p=...$salt$hash).
package password

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"golang.org/x/crypto/argon2"
	"golang.org/x/sync/semaphore"
)

// Params are the argon2id cost parameters.
type Params struct {
	MemoryKiB uint32
	Time      uint32
	Threads   uint8
}

// Default follows the OWASP recommendation for argon2id (19 MiB, 2 passes, 1
// lane): one hash takes tens of milliseconds on a small server core, so a login
// stays fast while an offline guess stays expensive.
var Default = Params{MemoryKiB: 19 * 1024, Time: 2, Threads: 1}

// Limits of the parameters Verify accepts from a stored string, so a corrupted
// or hostile row cannot make one verification take minutes or gigabytes.
const (
	maxMemoryKiB = 256 * 1024
	maxTime      = 10
	saltLen      = 16
	keyLen       = 32
)

// Length limits of a password (in characters).
const (
	MinLength = 8
	MaxLength = 1024
)

// idKey is argon2.IDKey; tests wrap it to watch how many run at once.
var idKey = argon2.IDKey

// ErrMalformed is returned for a stored hash that is not an argon2id PHC string.
var ErrMalformed = errors.New("password hash is not an argon2id PHC string")

// Check returns why p is not acceptable as a new password, or nil.
func Check(p string) error {
	switch n := utf8.RuneCountInString(p); {
	case !utf8.ValidString(p):
		return errors.New("must be valid UTF-8")
	case n < MinLength:
		return fmt.Errorf("must be at least %d characters", MinLength)
	case n > MaxLength:
		return fmt.Errorf("must be at most %d characters", MaxLength)
	}
	return nil
}

// Hash returns the PHC string of p with a fresh random salt.
func Hash(p string, params Params) (string, error) {
	salt := make([]byte, saltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("reading salt: %w", err)
	}
	key := idKey([]byte(p), salt, params.Time, params.MemoryKiB, params.Threads, keyLen)
	return encode(params, salt, key), nil
}

func encode(params Params, salt, key []byte) string {
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version,
		params.MemoryKiB, params.Time, params.Threads, b64.EncodeToString(salt), b64.EncodeToString(key))
}

// Verify reports whether p matches the PHC string encoded. It compares in
// constant time.
func Verify(p, encoded string) (bool, error) {
	params, salt, key, err := decode(encoded)
	if err != nil {
		return false, err
	}
	got := idKey([]byte(p), salt, params.Time, params.MemoryKiB, params.Threads, uint32(len(key)))
	return subtle.ConstantTimeCompare(got, key) == 1, nil
}

func decode(encoded string) (Params, []byte, []byte, error) {
	parts := strings.Split(encoded, "$")
	// "", "argon2id", "v=19", "m=..,t=..,p=..", salt, hash
	if len(parts) != 6 || parts[0] != "" || parts[1] != "argon2id" {
		return Params{}, nil, nil, ErrMalformed
	}
	var version int
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return Params{}, nil, nil, ErrMalformed
	}
	var p Params
	if n, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &p.MemoryKiB, &p.Time, &p.Threads); err != nil || n != 3 {
		return Params{}, nil, nil, ErrMalformed
	}
	if p.MemoryKiB < 8 || p.MemoryKiB > maxMemoryKiB || p.Time < 1 || p.Time > maxTime || p.Threads < 1 {
		return Params{}, nil, nil, ErrMalformed
	}
	salt, err := base64.RawStdEncoding.DecodeString(parts[4])
	if err != nil || len(salt) < 8 {
		return Params{}, nil, nil, ErrMalformed
	}
	key, err := base64.RawStdEncoding.DecodeString(parts[5])
	if err != nil || len(key) < 16 || len(key) > 64 {
		return Params{}, nil, nil, ErrMalformed
	}
	return p, salt, key, nil
}

// Hasher hashes and checks passwords, running at most a fixed number of
// argon2id computations at once. Each one holds Params.MemoryKiB of memory
// (19 MiB by default) and a core for tens of milliseconds, so running more at
// once than there are cores buys no throughput, only memory: without a bound,
// a burst of 20 logins on one replica (registration opening) would need
// 380 MiB and the pod would be killed at its busiest moment. Callers beyond
// the bound wait their turn, for as long as their context allows.
//
// For an unknown user (or one without a password) Check verifies against a
// dummy hash, so that the answer takes as long as for a known one.
type Hasher struct {
	params Params
	dummy  string
	slots  *semaphore.Weighted
}

// ErrBusy is returned when the caller's context ends while it waits for a
// free slot: the service is overloaded with password work, try again later.
var ErrBusy = errors.New("too many password checks at once")

// NewHasher returns a hasher making new hashes with params, at most
// concurrency at once (at least 1).
func NewHasher(params Params, concurrency int) (*Hasher, error) {
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("reading random bytes: %w", err)
	}
	dummy, err := Hash(base64.RawStdEncoding.EncodeToString(b[:]), params)
	if err != nil {
		return nil, err
	}
	return &Hasher{params: params, dummy: dummy, slots: semaphore.NewWeighted(int64(max(concurrency, 1)))}, nil
}

// acquire takes a slot, or returns ErrBusy (wrapping ctx's error) once ctx
// ends.
func (h *Hasher) acquire(ctx context.Context) error {
	if err := h.slots.Acquire(ctx, 1); err != nil {
		return fmt.Errorf("%w: %w", ErrBusy, err)
	}
	return nil
}

// Hash returns the PHC string of p, made with the hasher's parameters.
func (h *Hasher) Hash(ctx context.Context, p string) (string, error) {
	if err := h.acquire(ctx); err != nil {
		return "", err
	}
	defer h.slots.Release(1)
	return Hash(p, h.params)
}

// Check reports whether p matches encoded; an empty encoded (no such user, or
// a user without a password) is checked against the dummy and never matches.
// The error is ErrBusy, when ctx ended before a slot was free.
func (h *Hasher) Check(ctx context.Context, p, encoded string) (bool, error) {
	if err := h.acquire(ctx); err != nil {
		return false, err
	}
	defer h.slots.Release(1)
	if encoded != "" {
		if ok, err := Verify(p, encoded); err == nil {
			return ok, nil
		}
	}
	// No such user, no password, or a malformed stored hash: the same work,
	// never a match.
	_, _ = Verify(p, h.dummy)
	return false, nil
}
