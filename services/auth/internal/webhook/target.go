package webhook

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// Policy decides which targets webhooks may reach: public addresses, and,
// for the apps an operator allowed private targets, those inside the
// operator's allowed networks (WEBHOOK_ALLOWED_NETWORKS). CheckURL applies
// it when a subscription is made or changed; the dialer applies it to every
// connection the dispatcher opens, after the name was resolved, so a name
// that resolves elsewhere later (DNS rebinding) is refused all the same.
type Policy struct {
	allowed  []netip.Prefix
	resolver Resolver
}

// Resolver resolves host names (*net.Resolver).
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// resolveTimeout bounds the name lookup of CheckURL.
const resolveTimeout = 3 * time.Second

// blocked are the ranges no webhook reaches unless allowed: loopback,
// private, shared (CGNAT), link-local, "this network", reserved and
// broadcast (240.0.0.0/4 holds 255.255.255.255), the deprecated IPv6
// site-local prefix, and the IPv6 prefixes that embed an IPv4 address (NAT64,
// IPv4-compatible, 6to4, Teredo), through which a private IPv4 target could
// be reached.
// Unspecified and multicast addresses are refused by netip's predicates.
var blocked = func() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
		"192.0.0.0/24", "192.168.0.0/16", "198.18.0.0/15", "240.0.0.0/4",
		"::1/128", "fc00::/7", "fe80::/10", "fec0::/10", "64:ff9b::/96", "64:ff9b:1::/48",
		"::/96", "2002::/16", "2001::/32",
	} {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}()

// NewPolicy returns the policy allowing, beside public addresses, those in
// allowed.
func NewPolicy(allowed []netip.Prefix) *Policy {
	return &Policy{allowed: allowed, resolver: net.DefaultResolver}
}

// WithResolver returns a copy of p that resolves names with r (tests).
func (p *Policy) WithResolver(r Resolver) *Policy {
	c := *p
	c.resolver = r
	return &c
}

// Public reports whether a is a public unicast address.
func Public(a netip.Addr) bool {
	a = a.Unmap()
	if !a.IsValid() || a.IsUnspecified() || a.IsMulticast() || a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() {
		return false
	}
	for _, b := range blocked {
		if b.Contains(a) {
			return false
		}
	}
	return true
}

// inAllowed reports whether a is inside the operator's allowed networks.
func (p *Policy) inAllowed(a netip.Addr) bool {
	a = a.Unmap()
	for _, n := range p.allowed {
		if n.Contains(a) {
			return true
		}
	}
	return false
}

// Reach is which addresses one kind of connection may reach.
type Reach int

// The reaches of the dispatcher's connections.
const (
	// ReachPublic: public addresses only. https of an app that is not
	// allowed private targets.
	ReachPublic Reach = iota
	// ReachAllowed: public addresses and the allowed networks. https of an
	// app an operator allowed private targets.
	ReachAllowed
	// ReachPrivate: addresses inside the allowed networks that are not
	// public, only. Plain http, of an app allowed private targets: never
	// sent in the clear to a public address.
	ReachPrivate
)

// Permits reports whether a connection of reach r may go to a.
func (p *Policy) Permits(r Reach, a netip.Addr) bool {
	a = a.Unmap()
	switch r {
	case ReachPublic:
		return Public(a)
	case ReachAllowed:
		return Public(a) || p.inAllowed(a)
	default:
		return !Public(a) && p.inAllowed(a)
	}
}

// RefusedError is a connection the policy refused.
type RefusedError struct {
	Addr  netip.Addr
	Reach Reach
}

func (e *RefusedError) Error() string {
	switch {
	case e.Reach == ReachPrivate && Public(e.Addr):
		return "refused: " + e.Addr.String() + " is a public address, and http is sent only inside WEBHOOK_ALLOWED_NETWORKS"
	case e.Reach == ReachPublic:
		return "refused: " + e.Addr.String() + " is not a public address"
	}
	return "refused: " + e.Addr.String() + " is not a public address (nor in WEBHOOK_ALLOWED_NETWORKS)"
}

// Control returns a net.Dialer Control function refusing to connect where
// reach r may not go. It sees the address being connected to, after any
// name resolution, before the connection is made.
func (p *Policy) Control(r Reach) func(network, address string, c syscall.RawConn) error {
	return func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("refused: unexpected address %q", address)
		}
		if a := ap.Addr().Unmap(); !p.Permits(r, a) {
			return &RefusedError{Addr: a, Reach: r}
		}
		return nil
	}
}

// CheckURL returns what is wrong with raw as a webhook target of an app,
// "" when nothing is: an absolute https URL, without user info or fragment,
// at most MaxURLLength bytes, whose host resolves only to public addresses,
// or, when private (an operator allowed the app private targets), to
// addresses inside the allowed networks too; http only when private and
// every address of the host is a private one inside the allowed networks.
// An app not allowed private targets is told only that an address is not
// public, not whether the operator allows its network.
func (p *Policy) CheckURL(ctx context.Context, raw string, private bool) string {
	if raw == "" {
		return "is required"
	}
	if len(raw) > MaxURLLength {
		return fmt.Sprintf("must be at most %d bytes", MaxURLLength)
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil || !u.IsAbs() || u.Opaque != "" || u.Host == "":
		return "must be an absolute URL such as https://example.org/hooks"
	case u.Scheme != "https" && u.Scheme != "http":
		return "must be an https URL"
	case u.User != nil:
		return "must not carry a user name or password"
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return "must not have a fragment"
	case strings.ContainsAny(raw, " \t\r\n"):
		return "must not contain spaces"
	}
	host := u.Hostname()
	if port := u.Port(); port != "" && !validPort(port) {
		return "has an invalid port"
	}
	addrs, problem := p.resolve(ctx, host)
	if problem != "" {
		return problem
	}
	reach := ReachPublic
	if private {
		reach = ReachAllowed
	}
	allPrivate := true
	for _, a := range addrs {
		if !p.Permits(reach, a) {
			return fmt.Sprintf("resolves to %s, which is not a public address", a.Unmap())
		}
		allPrivate = allPrivate && p.Permits(ReachPrivate, a)
	}
	if u.Scheme == "http" && !(private && allPrivate) {
		return "must be an https URL (http only for hosts inside WEBHOOK_ALLOWED_NETWORKS, for an app an operator allowed them)"
	}
	return ""
}

// resolve returns the addresses of host (an IP literal or a name).
func (p *Policy) resolve(ctx context.Context, host string) ([]netip.Addr, string) {
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a}, ""
	}
	ctx, cancel := context.WithTimeout(ctx, resolveTimeout)
	defer cancel()
	addrs, err := p.resolver.LookupNetIP(ctx, "ip", host)
	if err != nil || len(addrs) == 0 {
		return nil, "has a host name that does not resolve"
	}
	return addrs, ""
}

func validPort(s string) bool {
	if len(s) > 5 {
		return false
	}
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
		n = n*10 + int(c-'0')
	}
	return n > 0 && n <= 65535
}
