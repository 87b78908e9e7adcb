// Package clientsecret generates client secrets and stores them as keyed hashes (HMAC-SHA256), compared in constant time.
package clientsecret

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
)

// MinLength is the shortest secret accepted (fixture import, rotation).
const MinLength = 32

// generatedBytes is the entropy of a server-generated secret (256 bits).
const generatedBytes = 32

// ErrTooShort is returned for a secret shorter than MinLength.
var ErrTooShort = errors.New("client secret must be at least 32 characters")

// Hasher computes keyed hashes of secrets with one key (CLIENT_SECRET_KEY).
type Hasher struct{ key []byte }

// NewHasher returns a hasher using key.
func NewHasher(key []byte) *Hasher { return &Hasher{key: append([]byte(nil), key...)} }

// Hash returns HMAC-SHA256(key, secret).
func (h *Hasher) Hash(secret string) []byte {
	m := hmac.New(sha256.New, h.key)
	m.Write([]byte(secret))
	return m.Sum(nil)
}

// Verify reports, in constant time, whether secret hashes to stored.
func (h *Hasher) Verify(secret string, stored []byte) bool {
	return hmac.Equal(h.Hash(secret), stored)
}

// Generate returns a new random secret of 256 bits, base64url without padding (43 characters).
func Generate() (string, error) {
	b := make([]byte, generatedBytes)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// Check validates a secret given by an operator (fixture).
func Check(secret string) error {
	if len(secret) < MinLength {
		return ErrTooShort
	}
	return nil
}
