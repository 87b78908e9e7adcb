package tokenauth_test

import (
	"context"
	"testing"
	"time"

	"github.com/eventreg/eventreg/libs/tokenauth"
	"github.com/eventreg/eventreg/libs/tokentest"
)

// TestClockSkewBetweenAuthAndAResourceService checks fresh tokens against a
// resource service whose clock is a few seconds off the issuer's, with the
// deployed default leeway (TOKEN_LEEWAY=30s).
func TestClockSkewBetweenAuthAndAResourceService(t *testing.T) {
	ts := tokentest.New(t)
	validator := func(t *testing.T, skew time.Duration) *tokenauth.Validator {
		v, err := tokenauth.New(tokenauth.Config{JWKSURL: ts.JWKSURL, Issuer: tokentest.Issuer, Audience: tokentest.Audience,
			Leeway: 30 * time.Second, Now: func() time.Time { return time.Now().Add(skew) }})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	t.Run("a resource clock 5s behind accepts a token issued now (iat in its future)", func(t *testing.T) {
		if _, err := validator(t, -5*time.Second).Validate(context.Background(), ts.Sign(t, "client:501", time.Now().Add(time.Hour), "user:read")); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("a resource clock 5s ahead accepts a token that expires in 3s", func(t *testing.T) {
		if _, err := validator(t, 5*time.Second).Validate(context.Background(), ts.Sign(t, "client:501", time.Now().Add(3*time.Second), "user:read")); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("skew beyond the leeway still rejects an expired token", func(t *testing.T) {
		if _, err := validator(t, time.Minute).Validate(context.Background(), ts.Sign(t, "client:501", time.Now().Add(3*time.Second), "user:read")); err == nil {
			t.Fatal("a token 57s past its expiry was accepted")
		}
	})
}
