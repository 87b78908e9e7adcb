package logout_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/eventreg/eventreg/services/auth/internal/accesstoken"
	"github.com/eventreg/eventreg/services/auth/internal/client"
	"github.com/eventreg/eventreg/services/auth/internal/client/clienttest"
	"github.com/eventreg/eventreg/services/auth/internal/idtoken"
	"github.com/eventreg/eventreg/services/auth/internal/logout"
)

const (
	wikiBack  = "https://wiki.example/signed-out"
	wikiCB    = "https://wiki.example/callback"
	wikiToken = "access-token-of-520"
	wikiHint  = "id-token-of-520"
	forumHint = "id-token-of-521"
)

type accessHints struct{}

func (accessHints) ReadHint(raw string) (accesstoken.Claims, error) {
	if raw != wikiToken {
		return accesstoken.Claims{}, errors.New("not a token of this server")
	}
	return accesstoken.Claims{Subject: "7", ClientID: "520"}, nil
}

type idHints struct{}

func (idHints) ReadHint(raw string) (idtoken.Claims, error) {
	switch raw {
	case wikiHint:
		return idtoken.Claims{Subject: "7", Audience: "520"}, nil
	case forumHint:
		return idtoken.Claims{Subject: "7", Audience: "521"}, nil
	}
	return idtoken.Claims{}, idtoken.ErrBadHint
}

type sessions struct{ deleted []string }

func (s *sessions) Delete(_ context.Context, id string) error {
	s.deleted = append(s.deleted, id)
	return nil
}

func newService() (*logout.Service, *sessions) {
	s := &sessions{}
	return &logout.Service{
		Clients: clienttest.Registry{
			520: {ID: 520, Kind: client.KindOBO, RedirectURIs: []string{wikiCB}, PostLogoutRedirectURIs: []string{wikiBack}},
			521: {ID: 521, Kind: client.KindOBO, RedirectURIs: []string{"https://forum.example/cb"}},
		},
		AccessTokens: accessHints{}, IDTokens: idHints{}, Sessions: s,
	}, s
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    logout.Request
		want logout.Plan
	}{
		{"nothing: a plain sign-out", logout.Request{}, logout.Plan{}},
		{"client_id and next are kept as sent", logout.Request{ClientID: "520", Next: wikiCB}, logout.Plan{ClientID: "520", Next: wikiCB}},
		{"an access_token hint names its app", logout.Request{AccessToken: wikiToken}, logout.Plan{ClientID: "520"}},
		{"an access_token hint of client_id's app", logout.Request{ClientID: "0520", AccessToken: wikiToken}, logout.Plan{ClientID: "0520"}},
		{"an id_token_hint names its app", logout.Request{IDTokenHint: wikiHint}, logout.Plan{ClientID: "520"}},
		{"a registered post_logout_redirect_uri, with state", logout.Request{IDTokenHint: wikiHint, PostLogoutRedirectURI: wikiBack, State: "s1"},
			logout.Plan{ClientID: "520", PostLogoutRedirectURI: wikiBack, State: "s1"}},
		{"a post_logout_redirect_uri with client_id alone", logout.Request{ClientID: "520", PostLogoutRedirectURI: wikiBack},
			logout.Plan{ClientID: "520", PostLogoutRedirectURI: wikiBack}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc, _ := newService()
			p, err := svc.Check(context.Background(), tc.r)
			if err != nil || p != tc.want {
				t.Fatalf("%+v %v, want %+v", p, err, tc.want)
			}
		})
	}
}

func TestCheckRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    logout.Request
		// tokenHint: the access_token is at fault (its own page).
		tokenHint bool
	}{
		{"an access_token this server did not sign", logout.Request{AccessToken: "forged"}, true},
		{"an access_token of another app than client_id", logout.Request{ClientID: "521", AccessToken: wikiToken}, true},
		{"an access_token with a malformed client_id", logout.Request{ClientID: "wiki", AccessToken: wikiToken}, true},
		{"an id_token_hint this server did not sign", logout.Request{IDTokenHint: "forged"}, false},
		{"an id_token_hint of another app than client_id", logout.Request{ClientID: "520", IDTokenHint: forumHint}, false},
		{"a state over 512 characters", logout.Request{State: strings.Repeat("s", 513)}, false},
		{"a post_logout_redirect_uri without an app", logout.Request{PostLogoutRedirectURI: wikiBack}, false},
		{"a post_logout_redirect_uri not registered", logout.Request{IDTokenHint: wikiHint, PostLogoutRedirectURI: wikiBack + "/x"}, false},
		{"a post_logout_redirect_uri of another app", logout.Request{IDTokenHint: forumHint, PostLogoutRedirectURI: wikiBack}, false},
		{"a post_logout_redirect_uri of an unknown app", logout.Request{ClientID: "404", PostLogoutRedirectURI: wikiBack}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc, _ := newService()
			_, err := svc.Check(context.Background(), tc.r)
			var invalid *logout.InvalidError
			if !errors.As(err, &invalid) || invalid.AccessTokenHint != tc.tokenHint || invalid.Why == "" {
				t.Fatalf("err %v", err)
			}
		})
	}
	t.Run("a registry that cannot answer is no invalid request", func(t *testing.T) {
		svc, _ := newService()
		_, err := svc.Check(context.Background(), logout.Request{ClientID: strconv.Itoa(clienttest.Unreachable), PostLogoutRedirectURI: wikiBack})
		var invalid *logout.InvalidError
		if err == nil || errors.As(err, &invalid) {
			t.Fatalf("err %v", err)
		}
	})
}

func TestDestination(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    logout.Plan
		want string
	}{
		{"an RP-initiated logout goes back with state", logout.Plan{ClientID: "520", PostLogoutRedirectURI: wikiBack, State: "s 1"}, wikiBack + "?state=s+1"},
		{"without state, to the URI as registered", logout.Plan{ClientID: "520", PostLogoutRedirectURI: wikiBack}, wikiBack},
		{"next when it is a registered redirect URI of the app", logout.Plan{ClientID: "520", Next: wikiCB}, wikiCB},
		{"any other next: the signed-out page", logout.Plan{ClientID: "520", Next: "https://evil.example/"}, ""},
		{"next of another app: the signed-out page", logout.Plan{ClientID: "521", Next: wikiCB}, ""},
		{"next without an app: the signed-out page", logout.Plan{Next: wikiCB}, ""},
		{"an unknown app: the signed-out page", logout.Plan{ClientID: "404", Next: wikiCB}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc, _ := newService()
			if got := svc.Destination(context.Background(), tc.p); got != tc.want {
				t.Fatalf("%q, want %q", got, tc.want)
			}
		})
	}
}

func TestEnd(t *testing.T) {
	svc, s := newService()
	for _, id := range []string{"", "sess-1"} {
		if err := svc.End(context.Background(), id); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(s.deleted, []string{"sess-1"}) {
		t.Fatalf("deleted %v: no session, nothing deleted; a session, it", s.deleted)
	}
}
