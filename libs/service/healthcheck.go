package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// DefaultHealthcheckTimeout bounds `<service> healthcheck`: below the
// 3-second timeout of the compose health checks, above /readyz's own
// 2-second bound on its dependency checks.
const DefaultHealthcheckTimeout = 2500 * time.Millisecond

// HealthcheckCommand returns `healthcheck`: it asks this process's own
// ops listener (OPS_ADDR, as `serve` reads it) for /readyz and
// succeeds only on a 200. The images have no shell, curl or wget, so this is
// what a container runtime's health check runs inside the container
// (docker-compose.yaml, decision 0017).
func HealthcheckCommand() *cobra.Command {
	timeout := DefaultHealthcheckTimeout
	cmd := &cobra.Command{
		Use:   "healthcheck",
		Short: "Exit 0 when this container's service answers 200 on its ops listener's /readyz",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return Healthcheck(cmd.Context(), os.Getenv, timeout)
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", timeout, "how long to wait for the answer")
	return cmd
}

// Healthcheck GETs /readyz from the ops listener named by OPS_ADDR in
// getenv (default ":9091"; a wildcard host means the loopback address)
// and returns nil on a 200 within timeout, else a one-line reason.
func Healthcheck(ctx context.Context, getenv func(string) string, timeout time.Duration) error {
	addr, err := readinessAddr(getenv("OPS_ADDR"))
	if err != nil {
		return err
	}
	target := "http://" + addr + "/readyz"
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	client := &http.Client{
		// never through a proxy from the environment, never anywhere else
		Transport:     &http.Transport{Proxy: nil, DisableKeepAlives: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	resp, err := client.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("healthcheck: %s: no answer within %s", target, timeout)
		}
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err // without the method and URL said already
		}
		return fmt.Errorf("healthcheck: %s: %s", target, oneLine(err.Error()))
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		return nil
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return fmt.Errorf("healthcheck: %s answered %s%s", target, resp.Status, readinessReason(body))
}

// readinessAddr turns a listen address into one to connect to: ":9091" and
// "0.0.0.0:9091" (or "[::]:9091") become 127.0.0.1:9091.
func readinessAddr(listen string) (string, error) {
	if listen == "" {
		listen = ":9091"
	}
	host, port, err := net.SplitHostPort(listen)
	if err != nil || port == "" {
		return "", fmt.Errorf("healthcheck: OPS_ADDR %q is not host:port", listen)
	}
	switch host {
	case "", "0.0.0.0", "::":
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), nil
}

// readinessReason summarises a /readyz answer body ({"status": "unready",
// "failed": {"postgresql": "..."}}) on one line.
func readinessReason(body []byte) string {
	var r struct {
		Status string            `json:"status"`
		Failed map[string]string `json:"failed"`
	}
	if json.Unmarshal(body, &r) != nil || r.Status == "" {
		return ""
	}
	parts := make([]string, 0, len(r.Failed))
	for name, reason := range r.Failed {
		parts = append(parts, name+": "+reason)
	}
	sort.Strings(parts)
	out := ": " + r.Status
	if len(parts) > 0 {
		out += " (" + strings.Join(parts, "; ") + ")"
	}
	const limit = 300
	out = oneLine(out)
	if len(out) > limit {
		out = out[:limit] + "..."
	}
	return out
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
