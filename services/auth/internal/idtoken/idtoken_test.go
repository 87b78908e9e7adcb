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

func (f *fakeSigner) VerifyIDToken(raw string) ([]byte, error) {
	parts := strings.SplitN(raw, ".", 3)
	if len(parts) != 3 || parts[0] != "h" || !strings.HasSuffix(raw, ".s") {
		return nil, errors.New("bad signature")
	}
	return []byte(strings.TrimSuffix(strings.TrimPrefix(raw, "h."), ".s")), nil
}

func TestReadHint(t *testing.T) {
	s := &fakeSigner{}
	i := NewIssuer(s, "https://id.example", time.Hour)
	i.now = func() time.Time { return time.Unix(1_000, 0) } // long expired by now
	tok, _, _ := i.Issue(Request{Alg: "RS256", Subject: "1001", ClientID: "505"})
	t.Run("an expired ID token of ours is a valid hint", func(t *testing.T) {
		i.now = time.Now
		if c, err := i.ReadHint(tok); err != nil || c.Subject != "1001" {
			t.Fatalf("%+v %v", c, err)
		}
	})
	t.Run("a bad signature or another issuer is ErrBadHint", func(t *testing.T) {
		other := NewIssuer(s, "https://other.example", time.Hour)
		foreign, _, _ := other.Issue(Request{Alg: "RS256", Subject: "1001", ClientID: "505"})
		for _, raw := range []string{"x" + tok, foreign, "", "h.{}.s"} {
			if _, err := i.ReadHint(raw); !errors.Is(err, ErrBadHint) {
				t.Errorf("%q: %v", raw, err)
			}
		}
	})
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
