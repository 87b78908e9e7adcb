package config

import (
	"strings"
	"testing"
)

func TestWebhooksConfig(t *testing.T) {
	t.Run("the defaults are valid", func(t *testing.T) {
		w, err := LoadFrom[Webhooks](map[string]string{})
		if err != nil {
			t.Fatal(err)
		}
		if !w.Delivery || w.Workers != 64 || w.EndpointConcurrency != 4 || w.Lease.String() != "30s" || len(w.AllowedNetworks) != 0 ||
			w.AppLimit() != 16 {
			t.Fatalf("%+v", w)
		}
	})
	t.Run("allowed networks are CIDRs", func(t *testing.T) {
		w, err := LoadFrom[Webhooks](map[string]string{"WEBHOOK_ALLOWED_NETWORKS": "10.20.0.0/16, 127.0.0.1/32,,fd00::/8"})
		if err != nil {
			t.Fatal(err)
		}
		if n, _ := w.Networks(); len(n) != 3 {
			t.Fatalf("%v", n)
		}
	})
	for name, tc := range map[string]struct{ env map[string]string }{
		"WEBHOOK_LEASE":            {map[string]string{"WEBHOOK_LEASE": "5s", "WEBHOOK_TIMEOUT": "5s"}},
		"WEBHOOK_ALLOWED_NETWORKS": {map[string]string{"WEBHOOK_ALLOWED_NETWORKS": "10.0.0.1"}},
		"WEBHOOK_WORKERS":          {map[string]string{"WEBHOOK_WORKERS": "0"}},
		"WEBHOOK_APP_CONCURRENCY":  {map[string]string{"WEBHOOK_APP_CONCURRENCY": "-1"}},
		"WEBHOOK_RETRY_BASE":       {map[string]string{"WEBHOOK_RETRY_BASE": "2h", "WEBHOOK_RETRY_MAX": "1h"}},
		"WEBHOOK_POLL_INTERVAL":    {map[string]string{"WEBHOOK_POLL_INTERVAL": "1ms"}},
		"WEBHOOK_TIMEOUT":          {map[string]string{"WEBHOOK_TIMEOUT": "10m", "WEBHOOK_LEASE": "20m"}},
	} {
		t.Run(name+" is checked", func(t *testing.T) {
			_, err := LoadFrom[Webhooks](tc.env)
			if err == nil || !strings.Contains(err.Error(), name) {
				t.Fatalf("%v", err)
			}
		})
	}
}
