package tokenauth_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwk"

	"github.com/eventreg/eventreg/libs/testkit"
	"github.com/eventreg/eventreg/libs/tokenauth"
)

// jwksServer serves whatever answer the test sets, from any goroutine.
type jwksServer struct {
	mu      sync.Mutex
	status  int
	ctype   string
	body    []byte
	fetches atomic.Int32
	srv     *httptest.Server
}

func newJWKSServer(t *testing.T, set jwk.Set) *jwksServer {
	t.Helper()
	s := &jwksServer{}
	s.publish(t, set)
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		s.fetches.Add(1)
		s.mu.Lock()
		defer s.mu.Unlock()
		w.Header().Set("Content-Type", s.ctype)
		w.WriteHeader(s.status)
		_, _ = w.Write(s.body)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *jwksServer) answer(status int, ctype string, body []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status, s.ctype, s.body = status, ctype, body
}

func (s *jwksServer) publish(t *testing.T, set jwk.Set) {
	t.Helper()
	b, err := json.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	s.answer(http.StatusOK, "application/json", b)
}

// fresh signs a token not seen before (a new jti), so validating it cannot
// hit the cache.
func fresh(t *testing.T, key jwk.Key) string {
	t.Helper()
	o := defaults()
	o.jti = rand.Text()
	return sign(t, key, o)
}

func TestJWKSAnswersThatNeverReplaceTheKeys(t *testing.T) {
	k1, set1 := newKey(t, "k1")
	k2, set2 := newKey(t, "k2")
	set2JSON, _ := json.Marshal(set2)
	oversized := append(append([]byte{}, set2JSON...), bytes.Repeat([]byte(" "), 1<<20)...)
	cases := map[string]struct {
		status int
		ctype  string
		body   []byte
	}{
		"status 500":              {http.StatusInternalServerError, "application/json", set2JSON},
		"status 203":              {http.StatusNonAuthoritativeInfo, "application/json", set2JSON},
		"HTML content type":       {http.StatusOK, "text/html", set2JSON},
		"no content type":         {http.StatusOK, "", set2JSON},
		"larger than 1 MiB":       {http.StatusOK, "application/json", oversized},
		"an empty set":            {http.StatusOK, "application/json", []byte(`{"keys":[]}`)},
		"not JSON":                {http.StatusOK, "application/json", []byte(`<html>maintenance</html>`)},
		"truncated JSON":          {http.StatusOK, "application/json", set2JSON[:len(set2JSON)/2]},
		"JSON that is not a JWKS": {http.StatusOK, "application/json", []byte(`{"status":"ok"}`)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := newJWKSServer(t, set1)
			v, _ := tokenauth.New(tokenauth.Config{JWKSURL: s.srv.URL, Issuer: issuer, Audience: audience, MinRefresh: time.Nanosecond})
			if _, err := v.Validate(context.Background(), fresh(t, k1)); err != nil {
				t.Fatal(err)
			}
			s.answer(tc.status, tc.ctype, tc.body)
			before := s.fetches.Load()
			// An unknown kid makes the validator refetch.
			if _, err := v.Validate(context.Background(), fresh(t, k2)); !errors.Is(err, tokenauth.ErrInvalid) {
				t.Fatalf("a token of the key in the refused answer: %v", err)
			}
			if s.fetches.Load() == before {
				t.Fatal("the validator did not refetch")
			}
			if _, err := v.Validate(context.Background(), fresh(t, k1)); err != nil {
				t.Fatalf("the keys held before were replaced: %v", err)
			}
			if err := v.Ready(context.Background()); err != nil {
				t.Fatalf("not ready: %v", err)
			}
		})
	}
	t.Run("before any good answer, an empty set is no keys", func(t *testing.T) {
		s := newJWKSServer(t, set1)
		s.answer(http.StatusOK, "application/json", []byte(`{"keys":[]}`))
		v, _ := tokenauth.New(tokenauth.Config{JWKSURL: s.srv.URL, Issuer: issuer, Audience: audience, MinRefresh: time.Nanosecond})
		if err := v.Ready(context.Background()); err == nil {
			t.Fatal("ready with an empty key set")
		}
		if _, err := v.Validate(context.Background(), fresh(t, k1)); !errors.Is(err, tokenauth.ErrUnavailable) {
			t.Fatalf("want ErrUnavailable, got %v", err)
		}
	})
	for _, ct := range []string{"application/json; charset=utf-8", "application/jwk-set+json", "Application/JWK-Set+JSON; charset=utf-8"} {
		t.Run("content type "+ct+" is accepted", func(t *testing.T) {
			s := newJWKSServer(t, set1)
			b, _ := json.Marshal(set1)
			s.answer(http.StatusOK, ct, b)
			v, _ := tokenauth.New(tokenauth.Config{JWKSURL: s.srv.URL, Issuer: issuer, Audience: audience})
			if _, err := v.Validate(context.Background(), fresh(t, k1)); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestCachedTokensOfADroppedKeyAreRefused(t *testing.T) {
	k1, set1 := newKey(t, "k1")
	k2, set2 := newKey(t, "k2")
	both := jwk.NewSet()
	for _, s := range []jwk.Set{set1, set2} {
		k, _ := s.Key(0)
		_ = both.AddKey(k)
	}
	s := newJWKSServer(t, both)
	v, _ := tokenauth.New(tokenauth.Config{JWKSURL: s.srv.URL, Issuer: issuer, Audience: audience,
		MinRefresh: time.Hour, RefreshEvery: 10 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	v.Start(ctx)
	dropped, kept := fresh(t, k1), fresh(t, k2)
	for _, tok := range []string{dropped, kept} {
		if _, err := v.Validate(ctx, tok); err != nil {
			t.Fatal(err)
		}
	}
	s.publish(t, set2) // k1 revoked or retired: gone from the JWKS
	err := testkit.Poll(ctx, 5*time.Second, func(ctx context.Context) error {
		if _, err := v.Validate(ctx, dropped); !errors.Is(err, tokenauth.ErrInvalid) {
			return errors.New("the cached token of the dropped key is still accepted")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Validate(ctx, kept); err != nil {
		t.Fatalf("a token of the key still published: %v", err)
	}
}
