package authorize_test

import (
	"context"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/eventreg/eventreg/services/auth/internal/authorize"
	"github.com/eventreg/eventreg/services/auth/internal/client/clienttest"
)

// challenge is a well-formed S256 code challenge.
var challenge = strings.Repeat("c", 43)

// query is a valid request with changes: a value "" deletes the parameter,
// one with "&" sets several values.
func query(changes map[string]string) url.Values {
	q := url.Values{"client_id": {"520"}, "redirect_uri": {redirect}, "response_type": {"code"}, "scope": {"openid profile"},
		"state": {"st"}, "code_challenge": {challenge}, "code_challenge_method": {"S256"}}
	for k, v := range changes {
		switch {
		case v == "":
			q.Del(k)
		case strings.Contains(v, "&"):
			q[k] = strings.Split(v, "&")
		default:
			q.Set(k, v)
		}
	}
	return q
}

func TestParseUntrusted(t *testing.T) {
	for _, tc := range []struct {
		name    string
		changes map[string]string
	}{
		{"a repeated client_id", map[string]string{"client_id": "520&520"}},
		{"a repeated redirect_uri", map[string]string{"redirect_uri": redirect + "&" + redirect}},
		{"no client_id", map[string]string{"client_id": ""}},
		{"a malformed client_id", map[string]string{"client_id": "wiki"}},
		{"an unknown app", map[string]string{"client_id": "404"}},
		{"no redirect_uri", map[string]string{"redirect_uri": ""}},
		{"a redirect_uri not registered byte for byte", map[string]string{"redirect_uri": redirect + "/"}},
		{"a service client", map[string]string{"client_id": "501"}},
	} {
		t.Run(tc.name+" is the error page, never a redirect", func(t *testing.T) {
			_, err := newWorld().svc.Parse(context.Background(), query(tc.changes))
			var untrusted *authorize.UntrustedError
			if !errors.As(err, &untrusted) || untrusted.Why == "" {
				t.Fatalf("err %v", err)
			}
		})
	}
	t.Run("a registry that cannot answer is neither", func(t *testing.T) {
		_, err := newWorld().svc.Parse(context.Background(), query(map[string]string{"client_id": strconv.Itoa(clienttest.Unreachable)}))
		var untrusted *authorize.UntrustedError
		var refused *authorize.Error
		if err == nil || errors.As(err, &untrusted) || errors.As(err, &refused) {
			t.Fatalf("err %v", err)
		}
	})
}

func TestParseRefusals(t *testing.T) {
	for _, tc := range []struct {
		name    string
		changes map[string]string
		code    string
	}{
		{"a repeated state", map[string]string{"state": "a&b"}, "invalid_request"},
		{"no response_type", map[string]string{"response_type": ""}, "invalid_request"},
		{"response_type token", map[string]string{"response_type": "token"}, "unsupported_response_type"},
		{"an unknown response_mode", map[string]string{"response_mode": "web_message"}, "invalid_request"},
		{"response_mode fragment", map[string]string{"response_mode": "fragment"}, "invalid_request"},
		{"a repeated response_mode", map[string]string{"response_mode": "query&query"}, "invalid_request"},
		{"a request object", map[string]string{"request": "eyJhbGciOiJub25lIn0.e30."}, "request_not_supported"},
		{"a request_uri", map[string]string{"request_uri": "https://app.example/req"}, "request_not_supported"},
		{"no scope", map[string]string{"scope": ""}, "invalid_scope"},
		{"a scope the app is not approved for", map[string]string{"scope": "openid email"}, "invalid_scope"},
		{"an unknown scope", map[string]string{"scope": "openid everything"}, "invalid_scope"},
		{"a malformed code_challenge", map[string]string{"code_challenge": "short"}, "invalid_request"},
		{"a code_challenge_method other than S256", map[string]string{"code_challenge_method": "plain"}, "invalid_request"},
		{"a nonce over 512 characters", map[string]string{"nonce": strings.Repeat("n", 513)}, "invalid_request"},
		{"an unknown prompt", map[string]string{"prompt": "sometimes"}, "invalid_request"},
		{"prompt none with another value", map[string]string{"prompt": "none login"}, "invalid_request"},
		{"a repeated prompt", map[string]string{"prompt": "login&consent"}, "invalid_request"},
		{"a negative max_age", map[string]string{"max_age": "-1"}, "invalid_request"},
		{"a max_age that is no number", map[string]string{"max_age": "soon"}, "invalid_request"},
		{"an id_token_hint this server did not sign", map[string]string{"id_token_hint": "forged"}, "invalid_request"},
		{"a login_hint over 320 characters", map[string]string{"login_hint": strings.Repeat("a", 321)}, "invalid_request"},
	} {
		t.Run(tc.name+" is "+tc.code+" at the app", func(t *testing.T) {
			w := newWorld()
			r, err := w.svc.Parse(context.Background(), query(tc.changes))
			var refused *authorize.Error
			if !errors.As(err, &refused) || refused.Code != tc.code {
				t.Fatalf("err %v, want %s", err, tc.code)
			}
			resp := w.svc.ErrorResponse(r, refused)
			if resp.RedirectURI != redirect || resp.Params.Get("error") != tc.code || resp.Params.Get("iss") != issuer || resp.Params.Get("code") != "" {
				t.Fatalf("%+v", resp)
			}
		})
	}
	t.Run("a client registered to require PKCE refuses a request without it", func(t *testing.T) {
		w := newWorld()
		strict := app
		strict.RequirePKCE = true
		w.svc.Clients = clienttest.Registry{appID: strict}
		_, err := w.svc.Parse(context.Background(), query(map[string]string{"code_challenge": "", "code_challenge_method": ""}))
		var refused *authorize.Error
		if !errors.As(err, &refused) || refused.Code != "invalid_request" {
			t.Fatalf("err %v", err)
		}
	})
}

func TestParseResponseMode(t *testing.T) {
	for _, tc := range []struct{ name, mode, want string }{
		{"none sent is query", "", authorize.ModeQuery},
		{"query", "query", authorize.ModeQuery},
		{"form_post", "form_post", authorize.ModeFormPost},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := newWorld().svc.Parse(context.Background(), query(map[string]string{"response_mode": tc.mode}))
			if err != nil || r.Mode != tc.want {
				t.Fatalf("%q %v", r.Mode, err)
			}
		})
	}
	t.Run("a later error of a form_post request goes back as a form post, with state", func(t *testing.T) {
		w := newWorld()
		r, err := w.svc.Parse(context.Background(), query(map[string]string{"response_mode": "form_post", "response_type": "token"}))
		var refused *authorize.Error
		if !errors.As(err, &refused) {
			t.Fatalf("err %v", err)
		}
		if resp := w.svc.ErrorResponse(r, refused); resp.Mode != authorize.ModeFormPost || resp.Params.Get("state") != "st" {
			t.Fatalf("%+v", resp)
		}
	})
	t.Run("an unknown response_mode itself goes back in the query", func(t *testing.T) {
		w := newWorld()
		r, err := w.svc.Parse(context.Background(), query(map[string]string{"response_mode": "form_post&form_post"}))
		var refused *authorize.Error
		if !errors.As(err, &refused) || w.svc.ErrorResponse(r, refused).Mode != authorize.ModeQuery {
			t.Fatalf("%v %+v", err, r)
		}
	})
}

func TestParseOpenID(t *testing.T) {
	for _, tc := range []struct {
		name    string
		changes map[string]string
		check   func(r authorize.Request) bool
	}{
		{"no prompt, no max_age", nil, func(r authorize.Request) bool { return r.Prompt == authorize.Prompt{} && r.MaxAge == -1 }},
		{"prompt none", map[string]string{"prompt": "none"}, func(r authorize.Request) bool { return r.Prompt == authorize.Prompt{None: true} }},
		{"prompt login consent", map[string]string{"prompt": "login consent"}, func(r authorize.Request) bool {
			return r.Prompt == authorize.Prompt{Login: true, Consent: true}
		}},
		{"prompt select_account asks nothing", map[string]string{"prompt": "select_account"}, func(r authorize.Request) bool { return r.Prompt == authorize.Prompt{} }},
		{"max_age 0", map[string]string{"max_age": "0"}, func(r authorize.Request) bool { return r.MaxAge == 0 }},
		{"an id_token_hint names its user", map[string]string{"id_token_hint": goodHint}, func(r authorize.Request) bool { return r.HintSubject == "7" }},
		{"login_hint, nonce and challenge are kept", map[string]string{"login_hint": "alice@example.org", "nonce": "n-1"}, func(r authorize.Request) bool {
			return r.LoginHint == "alice@example.org" && r.Nonce == "n-1" && r.Challenge == challenge
		}},
		{"ui_locales and display are ignored", map[string]string{"ui_locales": "fr-CA fr", "display": "popup"}, func(r authorize.Request) bool { return r.Prompt == authorize.Prompt{} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := newWorld().svc.Parse(context.Background(), query(tc.changes))
			if err != nil || !tc.check(r) {
				t.Fatalf("%+v %v", r, err)
			}
		})
	}
}

func TestAfterSignIn(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"prompt=login, max_age and id_token_hint are satisfied by the sign-in", "client_id=520&id_token_hint=h&max_age=0&prompt=login&state=st", "client_id=520&state=st"},
		{"other prompt values stay", "prompt=login+consent&state=st", "prompt=consent&state=st"},
		{"prompt=none stays (the request answers without a page)", "prompt=none", "prompt=none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, _ := url.ParseQuery(tc.in)
			if got := authorize.AfterSignIn(in).Encode(); got != tc.want {
				t.Fatalf("%s, want %s", got, tc.want)
			}
			if again, _ := url.ParseQuery(tc.in); again.Encode() != in.Encode() {
				t.Fatal("the request itself changed")
			}
		})
	}
}
