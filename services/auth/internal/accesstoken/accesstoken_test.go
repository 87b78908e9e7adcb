package accesstoken_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v2/jws"

	"github.com/eventreg/eventreg/libs/tokenauth"

	"github.com/eventreg/eventreg/services/auth/internal/accesstoken"
	"github.com/eventreg/eventreg/services/auth/internal/scope"
	"github.com/eventreg/eventreg/services/auth/internal/signing"
	"github.com/eventreg/eventreg/services/auth/internal/storetest"
)

func TestIssuedTokensPassTokenauth(t *testing.T) {
	m := signing.NewManager(&storetest.MemoryKeys{}, bytes.Repeat([]byte{3}, 32), signing.Config{RotationPeriod: time.Hour, ActivationDelay: time.Minute, RefreshInterval: time.Second, MaxTokenTTL: time.Hour}, nil)
	if err := m.Ensure(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := m.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	jwks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(m.JWKS())
	}))
	defer jwks.Close()
	iss := accesstoken.NewIssuer(m, "https://auth.example", "eventreg-api", time.Hour)
	v, err := tokenauth.New(tokenauth.Config{JWKSURL: jwks.URL, Issuer: "https://auth.example", Audience: "eventreg-api"})
	if err != nil {
		t.Fatal(err)
	}

	t.Run("an OBO token carries the RFC 9068 header and claims", func(t *testing.T) {
		tok, err := iss.Issue(accesstoken.UserSubject(1001), 502, scope.Parse("pii:email pii:basic"), "sid-1")
		if err != nil {
			t.Fatal(err)
		}
		msg, _ := jws.ParseString(tok.Token)
		h := msg.Signatures()[0].ProtectedHeaders()
		if h.Type() != "at+jwt" || h.Algorithm().String() != "ES256" || h.KeyID() == "" {
			t.Fatalf("header %v %v %v", h.Type(), h.Algorithm(), h.KeyID())
		}
		c, err := v.Validate(context.Background(), tok.Token)
		if err != nil {
			t.Fatal(err)
		}
		if c.UserID != 1001 || c.ClientID != "502" || c.ID == "" || c.SessionID != "sid-1" || !c.HasScope("pii:basic") || time.Until(c.Expiry) < 59*time.Minute {
			t.Fatalf("%+v", c)
		}
	})
	t.Run("a service token's subject is client:<id>", func(t *testing.T) {
		tok, _ := iss.Issue(accesstoken.ClientSubject(501), 501, scope.Parse("user:read"), "")
		c, err := v.Validate(context.Background(), tok.Token)
		if err != nil || c.Subject != "client:501" || c.UserID != 0 {
			t.Fatalf("%+v %v", c, err)
		}
	})
	t.Run("Read accepts own tokens and refuses others", func(t *testing.T) {
		tok, _ := iss.Issue("1", 502, scope.Parse("pii:basic"), "")
		if c, err := iss.Read(tok.Token); err != nil || c.Subject != "1" {
			t.Fatalf("%+v %v", c, err)
		}
		other := accesstoken.NewIssuer(m, "https://elsewhere.example", "eventreg-api", time.Hour)
		if _, err := other.Read(tok.Token); err == nil {
			t.Fatal("a token of another issuer was read")
		}
		if _, err := iss.Read(tok.Token[:len(tok.Token)-4] + "AAAA"); err == nil {
			t.Fatal("a tampered token was read")
		}
	})
}
