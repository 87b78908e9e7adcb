package tokenauth_test

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/eventreg/eventreg/libs/tokenauth"
	"github.com/eventreg/eventreg/libs/tokentest"
)

// FuzzValidate feeds arbitrary strings (and mutations of a real signed
// token) to Validate: it must never panic, must answer one of its documented
// errors, and may accept only a token carrying the claims that were signed.
func FuzzValidate(f *testing.F) {
	ts := tokentest.New(f)
	v, err := tokenauth.New(tokenauth.Config{JWKSURL: ts.JWKSURL, Issuer: tokentest.Issuer, Audience: tokentest.Audience, Leeway: time.Second})
	if err != nil {
		f.Fatal(err)
	}
	good := ts.Sign(f, "client:501", time.Now().Add(time.Hour), "user:read")
	parts := strings.Split(good, ".")
	none := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"at+jwt"}`))
	hs := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"HS256","typ":"at+jwt","kid":"x"}`))
	for _, s := range []string{good, "", ".", "..", "a.b.c", none + "." + parts[1] + ".", hs + "." + parts[1] + "." + parts[2],
		parts[0] + "." + parts[1] + ".", parts[0] + ".e30." + parts[2], good + "x", strings.Repeat("a", 9000),
		ts.Expired(f, "user:read"), ts.Sign(f, "client:501", time.Now().Add(time.Hour))} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c, err := v.Validate(ctx, raw)
		if err != nil {
			if !errors.Is(err, tokenauth.ErrInvalid) && !errors.Is(err, tokenauth.ErrExpired) && !errors.Is(err, tokenauth.ErrUnavailable) {
				t.Fatalf("undocumented error %v", err)
			}
			return
		}
		if c.Subject != "client:501" || c.ClientID != "501" {
			t.Fatalf("accepted a token with claims nobody signed: %+v", c)
		}
	})
}

// FuzzAuthorizationHeader sends arbitrary Authorization headers through the
// middleware: anything but a valid bearer token is a 401, never a 5xx.
func FuzzAuthorizationHeader(f *testing.F) {
	ts := tokentest.New(f)
	v, err := tokenauth.New(tokenauth.Config{JWKSURL: ts.JWKSURL, Issuer: tokentest.Issuer, Audience: tokentest.Audience, Leeway: time.Second})
	if err != nil {
		f.Fatal(err)
	}
	good := ts.Service(f, "user:read")
	for _, s := range []string{"Bearer " + good, "bearer " + good, "Bearer  " + good, "Basic " + good, "Bearer", "Bearer ", "", good, "Bearer a.b.c", "Bearer " + good + " extra"} {
		f.Add(s)
	}
	gin.SetMode(gin.TestMode)
	r := gin.New()
	r.GET("/x", v.Middleware(), func(c *gin.Context) { c.Status(http.StatusNoContent) })
	f.Fuzz(func(t *testing.T, header string) {
		req := httptest.NewRequest(http.MethodGet, "/x", nil)
		req.Header["Authorization"] = []string{header}
		w := httptest.NewRecorder()
		r.ServeHTTP(w, req)
		if w.Code != http.StatusNoContent && w.Code != http.StatusUnauthorized {
			t.Fatalf("%q: %d %s", header, w.Code, w.Body)
		}
		if w.Code == http.StatusUnauthorized && w.Header().Get("WWW-Authenticate") == "" {
			t.Fatalf("%q: 401 without a challenge", header)
		}
	})
}
