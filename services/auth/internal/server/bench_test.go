package server_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/eventreg/eventreg/services/auth/internal/authtest"
)

// BenchmarkClientCredentials measures the token endpoint's hot path
// (keyed-hash secret check, cached client, ES256 signing) over HTTP.
// Run: go test ./internal/server -run '^$' -bench ClientCredentials -cpu 2
func BenchmarkClientCredentials(b *testing.B) {
	s := authtest.Start(b, authtest.Options{})
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	hc := &http.Client{Transport: tr}
	b.SetParallelism(32)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req, _ := http.NewRequest(http.MethodPost, s.URL+"/api/oauth/token", strings.NewReader("grant_type=client_credentials&scope=user:read"))
			req.Header.Set("Content-Type", form)
			req.SetBasicAuth(authtest.ServiceID, authtest.ServiceSecret)
			resp, err := hc.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				b.Fatalf("status %d", resp.StatusCode)
			}
		}
	})
}
