package randtoken_test

import (
	"encoding/base64"
	"testing"

	"github.com/eventreg/eventreg/services/auth/internal/randtoken"
)

// TestNew: n random bytes as unpadded base64url (safe in a URL, a form and
// a cookie), a different string each time.
func TestNew(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		s := randtoken.New(32)
		b, err := base64.RawURLEncoding.DecodeString(s)
		if err != nil || len(b) != 32 {
			t.Fatalf("%q: %d bytes, %v", s, len(b), err)
		}
		if seen[s] {
			t.Fatalf("%q twice", s)
		}
		seen[s] = true
	}
}

// TestHash: the hex SHA-256 of the string, the only form Redis keeps.
func TestHash(t *testing.T) {
	const abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" // FIPS 180-2, SHA-256("abc")
	if got := randtoken.Hash("abc"); got != abc {
		t.Fatalf("Hash(abc) = %s", got)
	}
	if randtoken.Hash("abc ") == abc {
		t.Fatal("a different string has the same digest")
	}
}
