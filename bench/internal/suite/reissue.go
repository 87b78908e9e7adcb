package suite

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
)

// libs/cursor's wire format, version 1: version byte, the key after
// (big-endian), the digest of query and filter, then the truncated
// HMAC-SHA256 of all that. Only the suite needs to edit a cursor, so the
// layout is repeated here rather than exported by libs/cursor;
// reissue_test.go checks it against libs/cursor, so a change of format fails
// there.
const (
	cursorVersion    = 1
	cursorDigestLen  = 8
	cursorMACLen     = 16
	cursorPayloadLen = 1 + 8 + cursorDigestLen
	cursorRawLen     = cursorPayloadLen + cursorMACLen
)

// errForeignCursor is returned for a cursor not signed with the reissuer's key.
var errForeignCursor = errors.New("not a page cursor signed with CURSOR_KEY")

// cursorReissuer re-points cursors the services issued: it jumps to a page
// deep in a large result without walking every page before it.
type cursorReissuer struct{ key []byte }

func newCursorReissuer(key []byte) (*cursorReissuer, error) {
	if len(key) < 32 {
		return nil, fmt.Errorf("cursor key must be at least %d bytes", 32)
	}
	return &cursorReissuer{key: append([]byte(nil), key...)}, nil
}

// Reissue returns a cursor bound to the same query and filter as cursor (one
// signed with this key) but continuing after key after. It needs neither the
// query nor the filter: their digest is copied as it is.
func (r *cursorReissuer) Reissue(cursor string, after int64) (string, error) {
	if after < 0 || len(cursor) != base64.RawURLEncoding.EncodedLen(cursorRawLen) {
		return "", errForeignCursor
	}
	var raw [cursorRawLen]byte
	n, err := base64.RawURLEncoding.Decode(raw[:], []byte(cursor))
	if err != nil || n != cursorRawLen || raw[0] != cursorVersion || !hmac.Equal(raw[cursorPayloadLen:], r.mac(raw[:cursorPayloadLen])) {
		return "", errForeignCursor
	}
	binary.BigEndian.PutUint64(raw[1:9], uint64(after))
	copy(raw[cursorPayloadLen:], r.mac(raw[:cursorPayloadLen]))
	return base64.RawURLEncoding.EncodeToString(raw[:]), nil
}

func (r *cursorReissuer) mac(b []byte) []byte {
	h := hmac.New(sha256.New, r.key)
	h.Write(b)
	return h.Sum(nil)[:cursorMACLen]
}
