package authorize_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/eventreg/eventreg/services/auth/internal/authorize"
	"github.com/eventreg/eventreg/services/auth/internal/consent"
	"github.com/eventreg/eventreg/services/auth/internal/grant"
	"github.com/eventreg/eventreg/services/auth/internal/scope"
	"github.com/eventreg/eventreg/services/auth/internal/session"
)

// signedIn is user's session, signed in age before the world's clock.
func (w *world) signedIn(user int64, age time.Duration) *session.Session {
	return &session.Session{ID: "sess", UserID: user, CreatedAt: w.now.Add(-age)}
}

// consented remembers user's consent to the app for scopes.
func (w *world) consented(user int64, scopes string) {
	w.consents[[2]int64{user, appID}] = consent.Consent{UserID: user, ClientID: appID, Scopes: scope.Parse(scopes), ClientScopes: app.Scopes}
}

func (w *world) parse(t *testing.T, changes map[string]string) authorize.Request {
	t.Helper()
	r, err := w.svc.Parse(context.Background(), query(changes))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// outcome names what Authorize decided: a step, or the error code for the app.
func outcome(out authorize.Outcome, err error) string {
	var refused *authorize.Error
	switch {
	case errors.As(err, &refused):
		return refused.Code
	case errors.Is(err, authorize.ErrAccountGone):
		return "account gone"
	case err != nil:
		return "error: " + err.Error()
	}
	return map[authorize.Step]string{authorize.SignIn: "sign-in page", authorize.Consent: "consent page", authorize.Respond: "code"}[out.Step]
}

func TestAuthorizeDecides(t *testing.T) {
	for _, tc := range []struct {
		name    string
		changes map[string]string
		// session: 0 for none, else the user, signed in 10 minutes ago.
		user      int64
		consented string
		want      string
	}{
		{"no session: sign in", nil, 0, "", "sign-in page"},
		{"no session, prompt=none: login_required", map[string]string{"prompt": "none"}, 0, "", "login_required"},
		{"signed in, app not authorized: consent", nil, 7, "", "consent page"},
		{"signed in, app authorized for these scopes: a code", nil, 7, "openid profile", "code"},
		{"signed in, app authorized for more: a code", map[string]string{"scope": "openid"}, 7, "openid profile", "code"},
		{"signed in, app authorized for fewer: consent", nil, 7, "openid", "consent page"},
		{"prompt=consent asks though authorized", map[string]string{"prompt": "consent"}, 7, "openid profile", "consent page"},
		{"prompt=login signs in again though signed in", map[string]string{"prompt": "login"}, 7, "openid profile", "sign-in page"},
		{"prompt=none, authorized: a code without a page", map[string]string{"prompt": "none"}, 7, "openid profile", "code"},
		{"prompt=none, not authorized: consent_required", map[string]string{"prompt": "none"}, 7, "", "consent_required"},
		{"max_age shorter than the session: sign in again", map[string]string{"max_age": "60"}, 7, "openid profile", "sign-in page"},
		{"max_age shorter than the session, prompt=none: login_required", map[string]string{"max_age": "60", "prompt": "none"}, 7, "openid profile", "login_required"},
		{"max_age longer than the session: a code", map[string]string{"max_age": "3600"}, 7, "openid profile", "code"},
		{"max_age=0 always signs in again", map[string]string{"max_age": "0"}, 7, "openid profile", "sign-in page"},
		{"an id_token_hint of the signed-in user: a code", map[string]string{"id_token_hint": goodHint, "prompt": "none"}, 7, "openid profile", "code"},
		{"an id_token_hint of another user: sign in", map[string]string{"id_token_hint": goodHint}, strangerID, "", "sign-in page"},
		{"an id_token_hint of another user, prompt=none: login_required", map[string]string{"id_token_hint": goodHint, "prompt": "none"}, strangerID, "", "login_required"},
		{"a sensitive scope the user lacks, not authorized: consent, narrowed", map[string]string{"scope": "openid admin:ticket:read"}, 7, "", "consent page"},
		{"a sensitive scope the user lacks, prompt=none: interaction_required, not consent_required",
			map[string]string{"scope": "openid admin:ticket:read", "prompt": "none"}, 7, "", "interaction_required"},
		{"a sensitive scope the user lacks, the rest authorized: a code without a page", map[string]string{"scope": "openid admin:ticket:read"}, 7, "openid", "code"},
		{"a sensitive scope the user lacks, the rest authorized, prompt=none: a code", map[string]string{"scope": "openid admin:ticket:read", "prompt": "none"}, 7, "openid", "code"},
		{"a sensitive scope the user holds, prompt=none, not authorized: consent_required",
			map[string]string{"scope": "openid admin:ticket:read", "prompt": "none"}, 9, "", "consent_required"},
		{"only sensitive scopes the user lacks: invalid_scope", map[string]string{"scope": "admin:ticket:read"}, 7, "", "invalid_scope"},
		{"a user who is gone: the account gone", nil, 42, "", "account gone"},
		{"a user who is gone, prompt=none: interaction_required", map[string]string{"prompt": "none"}, 42, "", "interaction_required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld()
			if tc.consented != "" {
				w.consented(tc.user, tc.consented)
			}
			var sess *session.Session
			if tc.user != 0 {
				sess = w.signedIn(tc.user, 10*time.Minute)
			}
			out, err := w.svc.Authorize(context.Background(), sess, w.parse(t, tc.changes))
			if got := outcome(out, err); got != tc.want {
				t.Fatalf("%s, want %s", got, tc.want)
			}
			if tc.want == "code" && len(w.store.grants) != 1 {
				t.Fatalf("%d codes stored", len(w.store.grants))
			}
			if tc.want != "code" && len(w.store.grants) != 0 {
				t.Fatalf("a code was stored: %+v", w.store.grants)
			}
		})
	}
}

func TestAuthorizeNarrowsSensitiveScopes(t *testing.T) {
	w := newWorld()
	out, err := w.svc.Authorize(context.Background(), w.signedIn(7, time.Minute), w.parse(t, map[string]string{"scope": "openid admin:ticket:read profile"}))
	if err != nil || out.Step != authorize.Consent {
		t.Fatalf("%+v %v", out, err)
	}
	t.Run("the consent page asks the rest and names what is withheld", func(t *testing.T) {
		if !out.Request.Scopes.Equal(scope.Parse("openid profile")) || !slices.Equal(out.Request.Withheld, []string{"admin:ticket:read"}) {
			t.Fatalf("scopes %v, withheld %v", out.Request.Scopes, out.Request.Withheld)
		}
	})
	t.Run("a user who holds the permission may grant it", func(t *testing.T) {
		out, err := w.svc.Authorize(context.Background(), w.signedIn(9, time.Minute), w.parse(t, map[string]string{"scope": "openid admin:ticket:read"}))
		if err != nil || !out.Request.Scopes.Contains("admin:ticket:read") || len(out.Request.Withheld) != 0 {
			t.Fatalf("%+v %v", out, err)
		}
	})
}

func TestAuthorizeUserGoneEndsTheSession(t *testing.T) {
	w := newWorld()
	if _, err := w.svc.Authorize(context.Background(), w.signedIn(42, time.Minute), w.parse(t, nil)); !errors.Is(err, authorize.ErrAccountGone) {
		t.Fatalf("err %v", err)
	}
	if !slices.Equal(w.sessions.deleted, []string{"sess"}) {
		t.Fatalf("deleted %v", w.sessions.deleted)
	}
}

func TestDecide(t *testing.T) {
	ctx := context.Background()
	t.Run("deny is access_denied for the app; nothing is remembered or issued", func(t *testing.T) {
		w := newWorld()
		_, err := w.svc.Decide(ctx, *w.signedIn(7, time.Minute), w.parse(t, nil), false)
		var refused *authorize.Error
		if !errors.As(err, &refused) || refused.Code != "access_denied" || len(w.consents) != 0 || len(w.store.grants) != 0 {
			t.Fatalf("%v %v %v", err, w.consents, w.store.grants)
		}
	})
	for _, tc := range []struct {
		name, prior, asked string
		// changedApp: the app's approved scopes changed since the prior consent.
		changedApp bool
		// remembered is the consent after; code what the code grants.
		remembered, code string
	}{
		{"authorize remembers the scopes", "", "openid profile", false, "openid profile", "openid profile"},
		{"a later consent adds to the earlier one; the code has what was asked", "openid", "profile", false, "openid profile", "profile"},
		{"after the app's scopes changed the earlier consent is replaced", "openid", "profile", true, "profile", "profile"},
		{"a withheld scope is neither remembered nor granted", "", "openid admin:ticket:read", false, "openid", "openid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld()
			if tc.prior != "" {
				w.consented(7, tc.prior)
				if tc.changedApp {
					c := w.consents[[2]int64{7, appID}]
					c.ClientScopes = scope.Parse("openid")
					w.consents[[2]int64{7, appID}] = c
				}
			}
			resp, err := w.svc.Decide(ctx, *w.signedIn(7, time.Minute), w.parse(t, map[string]string{"scope": tc.asked}), true)
			if err != nil || resp.Params.Get("code") == "" {
				t.Fatalf("%+v %v", resp, err)
			}
			if got := w.consents[[2]int64{7, appID}]; !got.Scopes.Equal(scope.Parse(tc.remembered)) || !got.ClientScopes.Equal(app.Scopes) {
				t.Fatalf("remembered %v (app %v), want %s", got.Scopes, got.ClientScopes, tc.remembered)
			}
			if !w.store.grants[0].Scopes.Equal(scope.Parse(tc.code)) {
				t.Fatalf("the code grants %v, want %s", w.store.grants[0].Scopes, tc.code)
			}
		})
	}
}

func TestCodeIssuance(t *testing.T) {
	w := newWorld()
	w.consented(7, "openid profile")
	sess := w.signedIn(7, 90*time.Second)
	out, err := w.svc.Authorize(context.Background(), sess, w.parse(t, map[string]string{"nonce": "n-1", "response_mode": "form_post"}))
	if err != nil || out.Step != authorize.Respond {
		t.Fatalf("%+v %v", out, err)
	}
	g := w.store.grants[0]
	t.Run("the code is bound to the app, redirect URI, user, scopes and PKCE challenge", func(t *testing.T) {
		want := grant.CodeGrant{ClientID: appID, RedirectURI: redirect, UserID: 7, Scopes: scope.Parse("openid profile"), Challenge: challenge,
			Family: g.Family, Nonce: "n-1", AuthTime: sess.CreatedAt.Unix(), SID: sess.SID()}
		if g.Family == "" || g.SID == "" || !reflect.DeepEqual(g, want) {
			t.Fatalf("grant\n%+v\nwant\n%+v", g, want)
		}
	})
	t.Run("the family is reserved for the code's lifetime before the code exists", func(t *testing.T) {
		want := []string{"reserve 7 520 " + g.Family + " 3m0s", "create code family " + g.Family}
		if !slices.Equal(w.store.calls, want) {
			t.Fatalf("%v, want %v", w.store.calls, want)
		}
	})
	t.Run("the response carries code, state and iss, in the request's mode", func(t *testing.T) {
		r := out.Response
		if r.Mode != authorize.ModeFormPost || r.RedirectURI != redirect || r.Params.Get("code") != "code-1" || r.Params.Get("state") != "st" ||
			r.Params.Get("iss") != issuer || len(r.Params) != 3 {
			t.Fatalf("%+v", r)
		}
	})
	t.Run("without state the response has none", func(t *testing.T) {
		out, err := w.svc.Authorize(context.Background(), sess, w.parse(t, map[string]string{"state": ""}))
		if err != nil || out.Response.Params.Has("state") || out.Response.Params.Get("code") == "" {
			t.Fatalf("%+v %v", out.Response, err)
		}
	})
}

func TestResponseURL(t *testing.T) {
	for _, tc := range []struct{ name, uri, want string }{
		{"the parameters go into the query", "https://app.example/cb", "https://app.example/cb?code=c&iss=i"},
		{"a query the registered URI has is kept", "https://app.example/cb?tenant=a", "https://app.example/cb?code=c&iss=i&tenant=a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := authorize.Response{RedirectURI: tc.uri, Mode: authorize.ModeQuery, Params: map[string][]string{"code": {"c"}, "iss": {"i"}}}
			if got := r.URL(); got != tc.want {
				t.Fatalf("%s, want %s", got, tc.want)
			}
		})
	}
}

func TestApps(t *testing.T) {
	ctx := context.Background()
	w := newWorld()
	w.consented(7, "openid")
	w.consented(9, "openid")
	list, err := w.svc.Apps(ctx, 7)
	if err != nil || len(list) != 1 || list[0].UserID != 7 {
		t.Fatalf("%v %v", list, err)
	}
	t.Run("revoking an app forgets the consent and revokes the user's tokens for it", func(t *testing.T) {
		if err := w.svc.RevokeApp(ctx, 7, appID); err != nil {
			t.Fatal(err)
		}
		if _, ok := w.consents[[2]int64{7, appID}]; ok || !slices.Equal(w.store.revoked, [][2]int64{{7, appID}}) {
			t.Fatalf("%v %v", w.consents, w.store.revoked)
		}
		if _, ok := w.consents[[2]int64{9, appID}]; !ok {
			t.Fatal("another user's consent went too")
		}
	})
}
