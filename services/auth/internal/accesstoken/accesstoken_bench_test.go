package accesstoken_test

import (
	"context"
	"crypto/rand"
	"testing"
	"time"

	"github.com/eventreg/eventreg/services/auth/internal/accesstoken"
	"github.com/eventreg/eventreg/services/auth/internal/scope"
	"github.com/eventreg/eventreg/services/auth/internal/signing"
	"github.com/eventreg/eventreg/services/auth/internal/storetest"
)

// BenchmarkIssue is the token-signing hot path of every token request: claims
// to JSON, an ES256 signature and the compact JWS.
//
//	go test ./services/auth/internal/accesstoken -run '^$' -bench Issue -benchmem
func BenchmarkIssue(b *testing.B) {
	kek := make([]byte, 32)
	_, _ = rand.Read(kek)
	m := signing.NewManager(&storetest.MemoryKeys{}, kek, signing.Config{RotationPeriod: 30 * 24 * time.Hour, ActivationDelay: time.Hour,
		RefreshInterval: time.Minute, MaxTokenTTL: time.Hour}, nil)
	ctx := context.Background()
	if err := m.Ensure(ctx); err != nil {
		b.Fatal(err)
	}
	if err := m.Reload(ctx); err != nil {
		b.Fatal(err)
	}
	iss := accesstoken.NewIssuer(m, "https://events.example", "eventreg-api", time.Hour)
	scopes := scope.Parse("user:read", "registration:read")
	sub := accesstoken.ClientSubject(501)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := iss.Issue(sub, 501, scopes, ""); err != nil {
			b.Fatal(err)
		}
	}
}
