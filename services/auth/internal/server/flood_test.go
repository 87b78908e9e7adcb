package server_test

import (
	"net/http"
	"net/url"
	"sync"
	"testing"

	"github.com/eventreg/eventreg/services/auth/internal/authtest"
)

// noLimits lifts the per-client rate limits, so a test can flood.
var noLimits = map[string]string{"CLIENT_TOKEN_REQUESTS": "100000", "CLIENT_REVOCATIONS": "100000"}

// feedSize is the number of entries the revocation feed holds in Redis.
func feedSize(t *testing.T, s *authtest.Server) int64 {
	t.Helper()
	n, err := s.Redis.ZCard(bg(), "auth:{revoked}").Result()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func redisKeys(t *testing.T, s *authtest.Server) int64 {
	t.Helper()
	n, err := s.Redis.DBSize(bg()).Result()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// mintAndRevoke has the service client mint n tokens and revoke each,
// eight at a time.
func mintAndRevoke(t *testing.T, s *authtest.Server, n int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan string, n)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 8 {
				st, _, body := postUnchecked(t, s.URL+"/api/oauth/token", form, "grant_type=client_credentials", authtest.ServiceID, authtest.ServiceSecret)
				if st != http.StatusOK {
					errs <- "token: " + string(body)
					return
				}
				tok := decode(t, body)["access_token"].(string)
				if st, _, body := postUnchecked(t, s.URL+"/api/oauth/revoke", form, url.Values{"token": {tok}}.Encode(), authtest.ServiceID, authtest.ServiceSecret); st != http.StatusOK {
					errs <- "revoke: " + string(body)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
}

func TestRevocationFloodStaysBounded(t *testing.T) {
	s := authtest.Start(t, authtest.Options{Env: noLimits})
	mintAndRevoke(t, s, 20)
	feedBefore, keysBefore := feedSize(t, s), redisKeys(t, s)
	mintAndRevoke(t, s, 2000)
	t.Run("the feed holds one entry per client, not one per token", func(t *testing.T) {
		if n := feedSize(t, s); n > feedBefore || n > 5 {
			t.Fatalf("the feed grew from %d to %d entries with 2000 revocations", feedBefore, n)
		}
	})
	t.Run("Redis keys do not grow with the revocations", func(t *testing.T) {
		if n := redisKeys(t, s); n > keysBefore+5 {
			t.Fatalf("Redis went from %d to %d keys with 2000 revocations", keysBefore, n)
		}
	})
	t.Run("OBO access tokens revoked one by one cost one entry per family", func(t *testing.T) {
		badge := oboConfig(s, authtest.BadgeID, authtest.BadgeSecret, "pii:basic")
		tok := grant(t, s, badge, authtest.Alice)
		before := feedSize(t, s)
		rt := tok.RefreshToken
		for range 50 {
			st, m := refreshWith(t, s, rt, authtest.BadgeID, authtest.BadgeSecret)
			if st != 200 {
				t.Fatalf("refresh: %d %v", st, m)
			}
			rt = m["refresh_token"].(string)
			if st, _, body := post(t, s.URL+"/api/oauth/revoke", form, url.Values{"token": {m["access_token"].(string)}}.Encode(), authtest.BadgeID, authtest.BadgeSecret); st != 200 {
				t.Fatalf("revoke: %d %s", st, body)
			}
		}
		if n := feedSize(t, s); n > before+1 {
			t.Fatalf("the feed grew from %d to %d entries with 50 revocations in one family", before, n)
		}
	})
}

func TestTokenAndRevocationAreRateLimitedPerClient(t *testing.T) {
	s := authtest.Start(t, authtest.Options{Env: map[string]string{"CLIENT_TOKEN_REQUESTS": "5", "CLIENT_REVOCATIONS": "5"}})
	// tooManyAfter sends n requests; the last must be a 429 slow_down.
	tooManyAfter := func(t *testing.T, n int, send func() (int, http.Header, []byte)) {
		t.Helper()
		var st int
		var h http.Header
		var body []byte
		for range n {
			st, h, body = send()
		}
		if st != http.StatusTooManyRequests || h.Get("Retry-After") == "" || decode(t, body)["error"] != "slow_down" {
			t.Fatalf("want a 429 slow_down with Retry-After, got %d %v %s", st, h, body)
		}
	}
	t.Run("the token endpoint answers 429 past the client's allowance", func(t *testing.T) {
		tooManyAfter(t, 6, func() (int, http.Header, []byte) {
			return post(t, s.URL+"/api/oauth/token", form, "grant_type=client_credentials", authtest.ServiceID, authtest.ServiceSecret)
		})
	})
	t.Run("another client's tokens are not affected", func(t *testing.T) {
		if st, _, body := post(t, s.URL+"/api/oauth/token", form, "grant_type=client_credentials", authtest.ReaderID, authtest.ReaderSecret); st != 200 {
			t.Fatalf("%d %s", st, body)
		}
	})
	t.Run("the revocation endpoint answers 429 past the client's allowance", func(t *testing.T) {
		tooManyAfter(t, 6, func() (int, http.Header, []byte) {
			return post(t, s.URL+"/api/oauth/revoke", form, url.Values{"token": {"unknown"}}.Encode(), authtest.ReaderID, authtest.ReaderSecret)
		})
	})
}
