package tokenauth_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwk"

	"github.com/eventreg/eventreg/libs/tokenauth"
)

// tokenAt signs a token of client with sid issued at iat.
func tokenAt(t *testing.T, key jwk.Key, client, sid string, iat time.Time, exp time.Time) string {
	t.Helper()
	o := defaults()
	o.clientID, o.sid, o.iat, o.exp, o.jti = client, sid, iat, exp, fmt.Sprint(iat.UnixNano(), client, sid)
	return sign(t, key, o)
}

func TestRevocationCutoffs(t *testing.T) {
	ks := newKeyServer(t, "k1")
	f := newFeedServer(t)
	now := time.Now().Truncate(time.Second)
	hour := now.Add(time.Hour)
	v := startWithFeed(t, ks, f, tokenauth.Config{})
	older, newer := tokenAt(t, ks.priv, "501", "", now.Add(-time.Minute), hour), tokenAt(t, ks.priv, "501", "", now.Add(time.Second), hour)
	otherClient := tokenAt(t, ks.priv, "504", "", now.Add(-time.Minute), hour)
	famOld, famNew := tokenAt(t, ks.priv, "502", "fam-1", now.Add(-time.Minute), hour), tokenAt(t, ks.priv, "502", "fam-1", now.Add(time.Second), hour)
	otherFam := tokenAt(t, ks.priv, "502", "fam-2", now.Add(-time.Minute), hour)
	for _, tok := range []string{older, newer, otherClient, famOld, famNew, otherFam} {
		wantValid(t, v, tok) // cached
	}
	f.mu.Lock()
	f.entries = append(f.entries,
		map[string]any{"client_id": "501", "iat_through": now.Unix(), "exp": hour.Unix()},
		map[string]any{"family_sid": "fam-1", "iat_through": now.Unix(), "exp": hour.Unix()})
	f.mu.Unlock()
	f.polled(t)
	t.Run("a client cutoff revokes the client's tokens issued at or before it", func(t *testing.T) {
		wantRevoked(t, v, older)
		wantValid(t, v, newer)
		wantValid(t, v, otherClient)
	})
	t.Run("a family cutoff revokes the family's tokens issued at or before it", func(t *testing.T) {
		wantRevoked(t, v, famOld)
		wantValid(t, v, famNew)
		wantValid(t, v, otherFam)
	})
}

// TestRevocationListIsCapped: a feed larger than MaxRevocations is not held
// whole; the entries expiring first are dropped and the tokens they could
// name are refused (fail closed), later ones are not.
func TestRevocationListIsCapped(t *testing.T) {
	ks := newKeyServer(t, "k1")
	now := time.Now().Truncate(time.Second)
	// jti-i expires i seconds after ten minutes from now.
	f := newListFeed(2000, func(i int) (string, time.Time) {
		return "jti-" + strconv.Itoa(i), now.Add(10*time.Minute + time.Duration(i)*time.Second)
	})
	t.Cleanup(f.srv.Close)
	v := startWithFeed(t, ks, f, tokenauth.Config{MaxRevocations: 1000})
	st := v.RevocationStats()
	if st.Held > 1000 || st.Dropped == 0 || st.Floor == 0 {
		t.Fatalf("2000 entries over a cap of 1000: %+v", st)
	}
	t.Run("a token named by a dropped entry is refused", func(t *testing.T) {
		o := defaults()
		o.jti, o.exp = "jti-0", now.Add(10*time.Minute)
		wantRevoked(t, v, sign(t, ks.priv, o))
	})
	t.Run("an unlisted token expiring before the floor is refused too (fail closed)", func(t *testing.T) {
		o := defaults()
		o.jti, o.exp = "not-listed", time.Unix(st.Floor, 0)
		wantRevoked(t, v, sign(t, ks.priv, o))
	})
	t.Run("a token kept on the list, and one expiring after the floor, are judged as before", func(t *testing.T) {
		o := defaults()
		o.jti, o.exp = "jti-1999", now.Add(time.Hour)
		wantRevoked(t, v, sign(t, ks.priv, o))
		o.jti = "not-listed"
		wantValid(t, v, sign(t, ks.priv, o))
	})
}
