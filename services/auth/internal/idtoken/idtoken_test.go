package idtoken

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

type fakeSigner struct {
	alg     string
	payload []byte
	fail    bool
}

func (f *fakeSigner) SignIDToken(alg string, payload []byte) (string, error) {
	if f.fail {
		return "", errors.New("no key")
	}
	f.alg, f.payload = alg, payload
	return "h." + string(payload) + ".s", nil
}

func TestIssue(t *testing.T) {
	s := &fakeSigner{}
	i := NewIssuer(s, "https://id.example", time.Hour)
	now := time.Unix(1_800_000_000, 0)
	i.now = func() time.Time { return now }
	_, c, err := i.Issue(Request{Alg: "RS256", Subject: "1001", ClientID: "502", AuthTime: 1_799_999_000, Nonce: "n-0S6_WzA2Mj", AccessToken: "abc", SID: "sess"})
	if err != nil {
		t.Fatal(err)
	}
	t.Run("the claims the request names, with the issuer's times and the client's algorithm", func(t *testing.T) {
		var got map[string]any
		if err := json.Unmarshal(s.payload, &got); err != nil {
			t.Fatal(err)
		}
		want := map[string]any{"iss": "https://id.example", "sub": "1001", "aud": "502", "iat": 1.8e9, "exp": 1.8e9 + 3600,
			"auth_time": 1.799999e9, "nonce": "n-0S6_WzA2Mj", "at_hash": AtHash("abc"), "sid": "sess"}
		if len(got) != len(want) || s.alg != "RS256" {
			t.Fatalf("%v (%s)", got, s.alg)
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s = %v, want %v", k, got[k], v)
			}
		}
		if c.Nonce != "n-0S6_WzA2Mj" {
			t.Fatal(c)
		}
	})
	t.Run("no nonce, access token or session: those claims are absent", func(t *testing.T) {
		if _, _, err := i.Issue(Request{Alg: "ES256", Subject: "1", ClientID: "2", AuthTime: 5}); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"nonce", "at_hash", "sid"} {
			if strings.Contains(string(s.payload), `"`+k+`"`) {
				t.Errorf("%s present: %s", k, s.payload)
			}
		}
	})
	t.Run("a signing failure is an error", func(t *testing.T) {
		s.fail = true
		defer func() { s.fail = false }()
		if _, _, err := i.Issue(Request{Alg: "RS256"}); err == nil {
			t.Fatal("no error")
		}
	})
}

func TestAtHash(t *testing.T) {
	// OpenID Connect Core 1.0 Appendix A.3 gives at_hash 77QmUPtjPfzWtF2AnpK9RQ for this access token (RS256, SHA-256).
	if got := AtHash("jHkWEdUXMU1BwAsC4vtUsZwnNvTIxEl0z9K3vx5KF0Y"); got != "77QmUPtjPfzWtF2AnpK9RQ" {
		t.Fatalf("at_hash %s", got)
	}
}
