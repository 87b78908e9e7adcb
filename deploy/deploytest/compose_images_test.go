package deploytest

import (
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/types"
)

// composeVendors are the Docker Hub namespaces, besides Docker's official
// images (library/), that compose may pull from: each is the project's own
// namespace of the software it holds.
var composeVendors = map[string]string{
	"otel":          "the OpenTelemetry project (the collector)",
	"jaegertracing": "the Jaeger project",
}

// projectRegistry is where the project's own images live (the chart's default
// registry; compose builds them under that name, never pulling them).
const projectRegistry = "ghcr.io/eventreg/"

// imageOrigin says whose an image reference is: "project" (built here),
// "official" (a Docker official image), "vendor" (a namespace of
// composeVendors), or "" with the reason it is none of these.
func imageOrigin(ref string, built bool) (origin, why string) {
	name, _, _ := strings.Cut(ref, "@")
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		name = name[:i]
	}
	if strings.HasPrefix(name, projectRegistry) {
		if !built {
			return "", "the project's registry, but not built here (it would be pulled)"
		}
		return "project", ""
	}
	host, rest, found := strings.Cut(name, "/")
	if !found || !(strings.ContainsAny(host, ".:") || host == "localhost") {
		host, rest = "docker.io", name
	}
	if host != "docker.io" && host != "index.docker.io" && host != "registry-1.docker.io" {
		return "", "registry " + host + " is neither Docker Hub nor the project's " + projectRegistry
	}
	namespace, repo, found := strings.Cut(rest, "/")
	switch {
	case !found:
		return "official", ""
	case namespace == "library" && !strings.Contains(repo, "/"):
		return "official", ""
	case composeVendors[namespace] != "" && !strings.Contains(repo, "/"):
		return "vendor", ""
	}
	return "", "Docker Hub namespace " + namespace + "/ belongs to neither Docker's official images nor a vendor of composeVendors"
}

// TestComposeImageNamespaces: compose pulls only Docker's official images and
// those of named vendors, each pinned to a release, and builds the project's
// own; a community namespace (alpine/, bitnami/, someone/) fails.
func TestComposeImageNamespaces(t *testing.T) {
	p := loadCompose(t)
	origins := map[string]int{}
	builtHere := map[string]bool{} // images a service of the file builds (its migration and import run them)
	for _, s := range p.Services {
		if s.Build != nil && s.PullPolicy == types.PullPolicyBuild {
			builtHere[s.Image] = true
		}
	}
	for name, s := range p.Services {
		origin, why := imageOrigin(s.Image, builtHere[s.Image])
		if origin == "" {
			t.Errorf("%s: image %s: %s", name, s.Image, why)
			continue
		}
		origins[origin]++
		if origin != "project" && !pinned(s.Image) {
			t.Errorf("%s: image %s is not pinned to a release", name, s.Image)
		}
	}
	if origins["project"] == 0 || origins["official"] == 0 {
		t.Errorf("images by origin %v: expected the project's and Docker's official ones", origins)
	}
	// The gateway's certificate is made by the gateway's own image.
	if gw, cert := p.Services["gateway"], p.Services["gateway-cert"]; gw.Image == "" || cert.Image != gw.Image {
		t.Errorf("gateway-cert uses %q, the gateway %q: want the gateway's own image, which has openssl", cert.Image, gw.Image)
	}
}

func TestImageOriginAllowList(t *testing.T) {
	for ref, want := range map[string]string{
		"postgres:17.6-alpine":                           "official",
		"docker.io/library/redis:7.4.6-alpine":           "official",
		"nginx:1.28.0@sha256:" + strings.Repeat("a", 64): "official",
		"otel/opentelemetry-collector-contrib:0.137.0":   "vendor",
		"docker.io/jaegertracing/jaeger:2.11.0":          "vendor",
		"alpine/openssl:3.5.5":                           "",
		"docker.io/alpine/openssl:3.5.5":                 "",
		"bitnami/redis:7.4":                              "",
		"otel/sub/image:1":                               "",
		"quay.io/prometheus/prometheus:v3.0.0":           "",
		"ghcr.io/someone/eventreg-auth:dev":              "",
		"localhost:5000/nginx:1":                         "",
	} {
		if got, why := imageOrigin(ref, false); got != want {
			t.Errorf("imageOrigin(%s) = %q (%s), want %q", ref, got, why, want)
		}
	}
	if got, _ := imageOrigin(projectRegistry+"eventreg-auth:dev", true); got != "project" {
		t.Errorf("the project's built image: %q", got)
	}
	if got, _ := imageOrigin(projectRegistry+"eventreg-auth:dev", false); got != "" {
		t.Errorf("the project's image, pulled: %q, want refused", got)
	}
}

// TestComposeClientAddresses: the services see the client's address, not the
// gateway's. The compose network has an explicit subnet; the gateway (and
// users, which forwards two paths to their owners with the gateway's
// X-Forwarded-For) have fixed addresses in it, outside the range handed out
// to the other containers; each service's TRUSTED_PROXIES names exactly those
// peers, so no other container can choose the address it is throttled and
// logged under. The gateway replaces a client's X-Forwarded-For with the peer
// (also TestComposeGatewayConfig) and takes no client address from headers.
func TestComposeClientAddresses(t *testing.T) {
	p := loadCompose(t)
	network, ok := p.Networks["default"]
	if !ok || len(network.Ipam.Config) != 1 {
		t.Fatalf("docker-compose.yaml: the default network has no single explicit ipam config: %+v", network)
	}
	pool := network.Ipam.Config[0]
	subnet, err := netip.ParsePrefix(pool.Subnet)
	if err != nil {
		t.Fatalf("default network subnet %q: %v", pool.Subnet, err)
	}
	var dynamic netip.Prefix
	if pool.IPRange != "" {
		if dynamic, err = netip.ParsePrefix(pool.IPRange); err != nil || !subnet.Contains(dynamic.Addr()) {
			t.Fatalf("default network ip_range %q: not inside %s (%v)", pool.IPRange, subnet, err)
		}
	}
	fixed := func(svc string) netip.Addr {
		t.Helper()
		s, ok := p.Services[svc]
		if !ok {
			t.Fatalf("no service %s", svc)
		}
		n := s.Networks["default"]
		if n == nil || n.Ipv4Address == "" {
			t.Fatalf("%s has no fixed ipv4_address on the default network", svc)
		}
		a, err := netip.ParseAddr(n.Ipv4Address)
		if err != nil || !subnet.Contains(a) || a == subnet.Addr().Next() {
			t.Fatalf("%s: ipv4_address %q is not a container address in %s", svc, n.Ipv4Address, subnet)
		}
		if dynamic.IsValid() && dynamic.Contains(a) {
			t.Errorf("%s: ipv4_address %s lies in ip_range %s, which Docker hands to other containers", svc, a, dynamic)
		}
		return a
	}
	gateway, users := fixed("gateway"), fixed("users")
	if gateway == users {
		t.Fatalf("the gateway and users share %s", gateway)
	}

	for _, svc := range services {
		want := []netip.Addr{gateway}
		for _, owner := range forwardedByUsers {
			if owner == svc && !slices.Contains(want, users) {
				want = append(want, users)
			}
		}
		for _, name := range []string{svc, "migrate-" + svc, "import-" + svc} {
			raw := deref(p.Services[name].Environment["TRUSTED_PROXIES"])
			var got []netip.Addr
			for _, entry := range strings.Split(raw, ",") {
				entry = strings.TrimSpace(entry)
				pfx, err := netip.ParsePrefix(entry)
				if err != nil {
					var a netip.Addr
					if a, err = netip.ParseAddr(entry); err == nil {
						pfx = netip.PrefixFrom(a, a.BitLen())
					}
				}
				if err != nil || !pfx.IsSingleIP() {
					t.Errorf("%s: TRUSTED_PROXIES entry %q is not one address: trust only the gateway and users, not a range", name, entry)
					continue
				}
				got = append(got, pfx.Addr())
			}
			slices.SortFunc(got, netip.Addr.Compare)
			slices.SortFunc(want, netip.Addr.Compare)
			if !slices.Equal(got, want) {
				t.Errorf("%s: TRUSTED_PROXIES %q, want exactly %v (the gateway%s)", name, raw, want,
					map[bool]string{true: " and users, which forwards to it", false: ""}[len(want) > 1])
			}
		}
	}

	conf := readRepoFile(t, "deploy/nginx/compose.conf")
	if !regexp.MustCompile(`(?m)^\s*proxy_set_header X-Forwarded-For \$remote_addr;`).MatchString(conf) {
		t.Error("compose.conf does not replace X-Forwarded-For with $remote_addr")
	}
	for _, d := range []string{"real_ip_header", "set_real_ip_from", "$proxy_add_x_forwarded_for"} {
		if strings.Contains(conf, d) {
			t.Errorf("compose.conf uses %s: the gateway is the edge and must take the client from the connection only", d)
		}
	}
}
