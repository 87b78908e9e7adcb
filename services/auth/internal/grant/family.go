package grant

import (
	"crypto/sha256"
	"encoding/base64"
	"strings"

	"github.com/eventreg/eventreg/services/auth/internal/randtoken"
)

// A refresh token is "<family>.<256 random bits>": the family's id (128
// random bits) names the family, so that a store finds it without an index
// and a rotated token still names the family it must revoke.

// NewFamilyID returns a fresh family id.
func NewFamilyID() string { return randtoken.New(16) }

// NewRefreshToken returns a new token of family.
func NewRefreshToken(family string) string { return family + "." + randtoken.New(32) }

// FamilyOfToken returns the family id a refresh token names, without
// checking it; ok is false when token does not have a refresh token's shape.
func FamilyOfToken(token string) (family string, ok bool) {
	id, rest, ok := strings.Cut(token, ".")
	return id, ok && len(id) == 22 && len(rest) == 43
}

// SessionID is the `sid` claim of the access tokens of family: it names the
// family to the resource services without revealing its id.
func SessionID(family string) string {
	sum := sha256.Sum256([]byte("eventreg sid|" + family))
	return base64.RawURLEncoding.EncodeToString(sum[:16])
}
