// Package cursor makes the opaque page cursors of keyset pagination: each names
// the last key of a page, is signed (HMAC-SHA256) so it cannot be forged or
// edited, and is bound to the query and filter it was issued for.
package cursor

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"sync"
)

const (
	version    = 1
	digestLen  = 8
	macLen     = 16
	payloadLen = 1 + 8 + digestLen
	rawLen     = payloadLen + macLen
)

// ErrInvalid is returned for any cursor that was not issued by this codec for
// this query and filter: malformed, tampered, or reused with another filter.
var ErrInvalid = errors.New("invalid page cursor")

// Codec encodes and decodes cursors with one key.
type Codec struct {
	pool sync.Pool // of hash.Hash (HMAC keyed)
}

// MinKeyLength is the shortest key accepted.
const MinKeyLength = 32

// NewCodec returns a codec signing with key (CURSOR_KEY; the same on every replica).
func NewCodec(key []byte) (*Codec, error) {
	if len(key) < MinKeyLength {
		return nil, fmt.Errorf("cursor key must be at least %d bytes", MinKeyLength)
	}
	k := append([]byte(nil), key...)
	c := &Codec{}
	c.pool.New = func() any { return hmac.New(sha256.New, k) }
	return c, nil
}

// Encode returns the cursor for the page after key `after` of query (a name
// such as "users.search") with filter (any JSON-marshalable value; nil for none).
func (c *Codec) Encode(query string, filter any, after int64) string {
	var raw [rawLen]byte
	raw[0] = version
	binary.BigEndian.PutUint64(raw[1:9], uint64(after))
	d := digest(query, filter)
	copy(raw[9:payloadLen], d[:])
	copy(raw[payloadLen:], c.mac(raw[:payloadLen]))
	return base64.RawURLEncoding.EncodeToString(raw[:])
}

// Decode returns the key the cursor continues after, or ErrInvalid.
func (c *Codec) Decode(cursor, query string, filter any) (int64, error) {
	if len(cursor) != base64.RawURLEncoding.EncodedLen(rawLen) {
		return 0, ErrInvalid
	}
	var raw [rawLen]byte
	n, err := base64.RawURLEncoding.Decode(raw[:], []byte(cursor))
	if err != nil || n != rawLen || raw[0] != version {
		return 0, ErrInvalid
	}
	if !hmac.Equal(raw[payloadLen:], c.mac(raw[:payloadLen])) {
		return 0, ErrInvalid
	}
	d := digest(query, filter)
	if !hmac.Equal(raw[9:payloadLen], d[:]) {
		return 0, ErrInvalid
	}
	after := int64(binary.BigEndian.Uint64(raw[1:9]))
	if after < 0 {
		return 0, ErrInvalid
	}
	return after, nil
}

func (c *Codec) mac(b []byte) []byte {
	h := c.pool.Get().(hash.Hash)
	h.Reset()
	h.Write(b)
	sum := h.Sum(nil)
	c.pool.Put(h)
	return sum[:macLen]
}

func digest(query string, filter any) [digestLen]byte {
	h := sha256.New()
	h.Write([]byte(query))
	h.Write([]byte{0})
	if filter != nil {
		b, err := json.Marshal(filter) // map keys sorted, struct fields in order: deterministic
		if err != nil {
			b = []byte(fmt.Sprintf("%#v", filter))
		}
		h.Write(b)
	}
	var d [digestLen]byte
	copy(d[:], h.Sum(nil))
	return d
}

// Reissue returns a cursor bound to the same query and filter as cursor (one
// this codec issued) but continuing after key after. It needs neither the
// query nor the filter: the benchmark suite uses it to jump to a page deep in
// a large result without walking every page before it.
func (c *Codec) Reissue(cursor string, after int64) (string, error) {
	if after < 0 || len(cursor) != base64.RawURLEncoding.EncodedLen(rawLen) {
		return "", ErrInvalid
	}
	var raw [rawLen]byte
	n, err := base64.RawURLEncoding.Decode(raw[:], []byte(cursor))
	if err != nil || n != rawLen || raw[0] != version || !hmac.Equal(raw[payloadLen:], c.mac(raw[:payloadLen])) {
		return "", ErrInvalid
	}
	binary.BigEndian.PutUint64(raw[1:9], uint64(after))
	copy(raw[payloadLen:], c.mac(raw[:payloadLen]))
	return base64.RawURLEncoding.EncodeToString(raw[:]), nil
}
