package tokenauth_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/eventreg/eventreg/libs/tokenauth"
)

// TestReadinessWaitsForTheFirstFeedRead: a replica is not ready until it has
// read the revocation feed once (else it would accept tokens revoked before
// it started); after that a failing feed does not take it out.
func TestReadinessWaitsForTheFirstFeedRead(t *testing.T) {
	ks := newKeyServer(t, "k1")
	f := newFeedServer(t)
	f.breakWith(func(w http.ResponseWriter) { w.WriteHeader(http.StatusServiceUnavailable) })
	v, err := tokenauth.New(tokenauth.Config{JWKSURL: ks.srv.URL, Issuer: issuer, Audience: audience,
		RevocationsURL: f.srv.URL + "/internal/revocations", RevocationPoll: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	v.Start(ctx)
	f.polled(t)
	t.Run("not ready while the feed has never answered, keys or not", func(t *testing.T) {
		if err := v.Ready(ctx); err == nil {
			t.Fatal("ready without having read the revocation feed")
		}
	})
	f.breakWith(nil)
	f.polled(t)
	t.Run("ready once it has been read", func(t *testing.T) {
		if err := v.Ready(ctx); err != nil {
			t.Fatal(err)
		}
	})
	f.breakWith(func(w http.ResponseWriter) { w.WriteHeader(http.StatusServiceUnavailable) })
	f.polled(t)
	t.Run("a feed failing later leaves it ready", func(t *testing.T) {
		if err := v.Ready(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

// TestFeedResetIsReadAgain: when the feed was lost and started again (a new
// epoch) or its numbers moved back below the cursor (a Redis failover that
// lost writes), the poller reads it all again instead of skipping what is
// numbered up to its old cursor.
func TestFeedResetIsReadAgain(t *testing.T) {
	hour := time.Now().Add(time.Hour)
	for _, tc := range []struct{ name, epochAfter string }{
		{"a new epoch is read from the start", "epoch-2"},
		{"numbers below the cursor in the same epoch are read from the start", "epoch-1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ks := newKeyServer(t, "k1")
			f := newFeedServer(t)
			f.epoch = "epoch-1"
			for _, jti := range []string{"a", "b", "c"} {
				f.revoke("jti", jti, hour)
			}
			v := startWithFeed(t, ks, f, tokenauth.Config{})
			wantRevoked(t, v, token(t, ks.priv, "c", ""))
			// The feed restarts: one entry, numbered 1, below the cursor (3).
			f.mu.Lock()
			f.epoch, f.entries = tc.epochAfter, []map[string]any{{"jti": "after-reset", "exp": hour.Unix()}}
			f.mu.Unlock()
			f.polled(t)
			wantRevoked(t, v, token(t, ks.priv, "after-reset", ""))
		})
	}
}
