// Package pkce checks Proof Key for Code Exchange parameters (RFC 7636); only the S256 method is accepted.
package pkce

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
)

// MethodS256 is the only method accepted (RFC 9700 §2.1.1: plain gives no protection).
const MethodS256 = "S256"

// ValidateChallenge checks the authorization request's parameters. Both empty
// means no PKCE; a challenge is 43 base64url characters (a SHA-256 digest).
func ValidateChallenge(challenge, method string) error {
	if challenge == "" && method == "" {
		return nil
	}
	if challenge == "" {
		return errors.New("code_challenge_method without code_challenge")
	}
	if method != MethodS256 {
		return errors.New("code_challenge_method must be S256")
	}
	if len(challenge) != 43 || !unreserved(challenge) {
		return errors.New("code_challenge must be the base64url SHA-256 of the verifier (43 characters)")
	}
	return nil
}

// ValidVerifier reports whether v has the form RFC 7636 §4.1 requires.
func ValidVerifier(v string) bool {
	return len(v) >= 43 && len(v) <= 128 && unreserved(v)
}

// Verify reports whether verifier matches the S256 challenge.
func Verify(challenge, verifier string) bool {
	if !ValidVerifier(verifier) {
		return false
	}
	sum := sha256.Sum256([]byte(verifier))
	want := base64.RawURLEncoding.EncodeToString(sum[:])
	return subtle.ConstantTimeCompare([]byte(want), []byte(challenge)) == 1
}

func unreserved(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '.', c == '_', c == '~':
		default:
			return false
		}
	}
	return true
}

// Challenge returns the S256 challenge of verifier.
func Challenge(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}
