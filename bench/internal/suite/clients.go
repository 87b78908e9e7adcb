package suite

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/oauth2"

	"github.com/eventreg/eventreg/bench/internal/oauthflow"
	"github.com/eventreg/eventreg/e2e/stack"
	"github.com/eventreg/eventreg/libs/fixture"
)

// The resource services limit each API client to 100 requests a second
// (libs/ratelimit). The read scenarios therefore spread their load over many
// registered apps, as many integrations would: the limiter (and its Redis
// round trip) stays on the measured path without capping the measurement.
// 256 service apps allow 25,600 reads a second (128 capped users-get-direct
// at 12,800/s: it made 13,500 with 4,115 answers of 429); the OBO apps serve
// only users-current (under 4,000/s) and each needs a login and a consent,
// so they stay at 128.
const (
	serviceApps        = 256
	oboApps            = 128
	firstServiceClient = 900_001
	firstOBOClient     = 901_001
)

// clients are the benchmark's own apps and their access tokens.
type clients struct {
	serviceTokens []string // client credentials: user:read volunteer:read registration:read
	oboTokens     []string // alice's pii:basic tokens, one per OBO app
}

// registerClients imports serviceApps service apps and oboApps OBO apps into
// auth (idempotent), then gets a token for each.
func registerClients(ctx context.Context, s *stack.Stack, dir, key string, browser *oauthflow.Browser) (*clients, error) {
	secret := func(id int64) string {
		m := hmac.New(sha256.New, []byte(key))
		m.Write([]byte("bench client " + strconv.FormatInt(id, 10)))
		return hex.EncodeToString(m.Sum(nil))
	}
	var doc fixture.Document
	for i := range int64(serviceApps) {
		id := firstServiceClient + i
		sec := secret(id)
		doc.Clients = append(doc.Clients, fixture.Client{ID: id, Name: fmt.Sprintf("Benchmark integration %d", i+1), Kind: "service",
			Secret: &sec, Scopes: []string{"user:read", "volunteer:read", "registration:read"}})
	}
	for i := range int64(oboApps) {
		id := firstOBOClient + i
		sec := secret(id)
		doc.Clients = append(doc.Clients, fixture.Client{ID: id, Name: fmt.Sprintf("Benchmark app %d", i+1), Kind: "obo",
			Secret: &sec, RedirectURIs: []string{oboRedirectURI}, Scopes: []string{"pii:basic"}})
	}
	b, err := json.MarshalIndent(doc, "", " ")
	if err != nil {
		return nil, fmt.Errorf("encoding the benchmark apps: %w", err)
	}
	path := filepath.Join(dir, "bench-clients.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return nil, fmt.Errorf("writing the benchmark apps: %w", err)
	}
	if _, err := s.Services["auth"].Run(ctx, nil, "import", path); err != nil {
		return nil, fmt.Errorf("importing the benchmark apps: %w", err)
	}

	c := &clients{}
	for i := range int64(serviceApps) {
		id := firstServiceClient + i
		tok, err := oauthflow.ServiceToken(ctx, s.GatewayURL, strconv.FormatInt(id, 10), secret(id), "user:read", "volunteer:read", "registration:read")
		if err != nil {
			return nil, err
		}
		c.serviceTokens = append(c.serviceTokens, tok)
	}
	for i := range int64(oboApps) {
		id := firstOBOClient + i
		app := oauthflow.App{Base: s.GatewayURL, ClientID: strconv.FormatInt(id, 10), ClientSecret: secret(id), RedirectURI: oboRedirectURI,
			Scopes: []string{"pii:basic"}, Verifier: oauth2.GenerateVerifier()}
		code, err := browser.Code(ctx, app)
		if err != nil {
			return nil, fmt.Errorf("authorizing benchmark app %d: %w", id, err)
		}
		tok, err := app.Exchange(ctx, code)
		if err != nil {
			return nil, err
		}
		c.oboTokens = append(c.oboTokens, tok.AccessToken)
	}
	return c, nil
}
