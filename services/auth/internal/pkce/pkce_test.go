package pkce

import (
	"testing"

	"golang.org/x/oauth2"
)

func TestPKCE(t *testing.T) {
	verifier := oauth2.GenerateVerifier()
	challenge := oauth2.S256ChallengeFromVerifier(verifier)
	t.Run("the verifier of golang.org/x/oauth2 matches its challenge", func(t *testing.T) {
		if err := ValidateChallenge(challenge, "S256"); err != nil {
			t.Fatal(err)
		}
		if !Verify(challenge, verifier) {
			t.Fatal("no match")
		}
	})
	t.Run("another verifier does not match", func(t *testing.T) {
		if Verify(challenge, oauth2.GenerateVerifier()) {
			t.Fatal("matched")
		}
	})
	t.Run("malformed parameters are refused", func(t *testing.T) {
		for name, c := range map[string][2]string{
			"plain method":         {verifier, "plain"},
			"method without value": {"", "S256"},
			"challenge no method":  {challenge, ""},
			"short challenge":      {"abc", "S256"},
			"bad characters":       {challenge[:42] + "+", "S256"},
		} {
			if ValidateChallenge(c[0], c[1]) == nil {
				t.Errorf("%s accepted", name)
			}
		}
	})
	t.Run("no PKCE at all is allowed", func(t *testing.T) {
		if ValidateChallenge("", "") != nil {
			t.Fatal("refused")
		}
	})
	t.Run("a verifier of the wrong form never matches", func(t *testing.T) {
		if Verify(challenge, "short") {
			t.Fatal("matched")
		}
	})
}
