package storetest

import (
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/eventreg/eventreg/libs/authapi"

	"github.com/eventreg/eventreg/services/auth/internal/accesstoken"
	"github.com/eventreg/eventreg/services/auth/internal/grant"
)

// Denylist runs the contract of access-token denylists; open returns an
// empty denylist for access tokens living an hour.
func Denylist(t *testing.T, open func(t *testing.T) grant.Denylist) {
	d := open(t)
	now := time.Now().Truncate(time.Second)
	token := func(client int64, sid string, issued time.Time) accesstoken.Claims {
		return accesstoken.Claims{ID: "jti-" + sid + strconv.FormatInt(issued.Unix(), 10), ClientID: strconv.FormatInt(client, 10),
			SessionID: sid, IssuedAt: issued.Unix()}
	}
	revoked := func(t *testing.T, c accesstoken.Claims) bool {
		t.Helper()
		r, err := d.Revoked(ctx, c)
		must(t, "reading the denylist", err)
		return r
	}
	cut := func(t *testing.T, who grant.Cutoff, through time.Time) {
		t.Helper()
		must(t, "revoking", d.RevokeIssuedThrough(ctx, who, through))
	}
	// since returns the entries of the feed numbered after after that name
	// client or sid, and the number to ask after next.
	since := func(t *testing.T, after int64, client, sid string) ([]authapi.Revocation, int64) {
		t.Helper()
		page, err := d.Feed(ctx, after)
		must(t, "reading the feed", err)
		if page.Epoch == "" {
			t.Fatal("the feed has no epoch")
		}
		var out []authapi.Revocation
		for _, e := range page.Revoked {
			if (client != "" && e.Client == client) || (sid != "" && (e.Family == sid || e.SID == sid)) {
				out = append(out, e)
			}
		}
		return out, page.Next
	}

	t.Run("a client cutoff revokes the client's tokens issued through it, no later one and no other client's", func(t *testing.T) {
		cut(t, grant.Cutoff{ClientID: 701}, now)
		check(t, "a token issued at the cutoff", revoked(t, token(701, "", now)), true)
		check(t, "a token of a family of the client", revoked(t, token(701, "s-701", now.Add(-time.Minute))), true)
		check(t, "a token issued after", revoked(t, token(701, "", now.Add(time.Second))), false)
		check(t, "another client's token", revoked(t, token(702, "", now)), false)
	})
	t.Run("a family cutoff revokes the family's tokens only", func(t *testing.T) {
		cut(t, grant.Cutoff{SID: "s-703"}, now)
		check(t, "the family's token", revoked(t, token(703, "s-703", now)), true)
		check(t, "another family's token", revoked(t, token(703, "s-704", now)), false)
		check(t, "the client's own token", revoked(t, token(703, "", now)), false)
	})
	t.Run("a later cutoff replaces an earlier one, an earlier one changes nothing", func(t *testing.T) {
		cut(t, grant.Cutoff{ClientID: 705}, now)
		cut(t, grant.Cutoff{ClientID: 705}, now.Add(-time.Hour))
		check(t, "a token through the later cutoff", revoked(t, token(705, "", now)), true)
		cut(t, grant.Cutoff{ClientID: 705}, now.Add(time.Minute))
		check(t, "a token through the newest cutoff", revoked(t, token(705, "", now.Add(time.Second))), true)
	})
	t.Run("the feed names each revocation after the number asked for, a replaced cutoff once", func(t *testing.T) {
		_, after := since(t, 0, "", "")
		cut(t, grant.Cutoff{ClientID: 706}, now.Add(-time.Second))
		cut(t, grant.Cutoff{ClientID: 706}, now)
		cut(t, grant.Cutoff{SID: "s-706"}, now)
		got, next := since(t, after, "706", "s-706")
		check(t, "the new entries", got, []authapi.Revocation{
			{Client: "706", IssuedThrough: now.Unix()},
			{Family: "s-706", IssuedThrough: now.Unix()},
		}, cmpopts.IgnoreFields(authapi.Revocation{}, "Expiry"))
		for _, e := range got {
			if e.Expiry < now.Add(time.Hour).Unix() {
				t.Fatalf("%+v expires before the tokens it names", e)
			}
		}
		again, _ := since(t, next, "706", "s-706")
		check(t, "entries after the last number", again, nil)
	})
}
