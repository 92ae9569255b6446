// Package egress decides where the worker may send webhooks: which URLs a
// job may name, and which addresses a webhook connection may reach. A URL
// can only be checked for what it says (scheme, credentials, a literal
// address); the address a name resolves to is checked at dial time, after
// DNS, on every connection (see Dialer), which is the check that counts: a
// name may resolve to a private address, or change between the checks.
//
// By default a webhook must be an https URL without credentials whose host
// resolves to a public unicast address. An operator may allow plain http and
// chosen private ranges or host names for development with a Policy written
// as in Parse (CARRYOVER_WEBHOOK_ALLOW).
package egress

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// Setting is the environment variable operators write a Policy in.
const Setting = "CARRYOVER_WEBHOOK_ALLOW"

// Policy is what the operator allows beyond public https. The zero Policy is
// the production default: https only, public unicast addresses only.
type Policy struct {
	// AllowHTTP allows plain http URLs.
	AllowHTTP bool
	// Prefixes are address ranges allowed although reserved (loopback,
	// private, link-local...). An IPv4-mapped, NAT64 or 6to4 address is
	// allowed when the IPv4 address it embeds is.
	Prefixes []netip.Prefix
	// Hosts are host names (lowercase, no trailing dot) whose connections
	// are not checked at all, whatever they resolve to.
	Hosts []string
}

// hostName is the shape of a DNS host name in an allow-list.
var hostName = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$`)

// Parse reads a policy: a comma-separated list of entries, each one of
//
//	http            allow plain http URLs (https is always allowed)
//	10.0.0.0/8      allow an address range (CIDR), e.g. 127.0.0.0/8, ::1/128, fd00::/8
//	192.168.1.20    allow one address (IPv4 or IPv6)
//	hooks.internal  allow a host name: its connections are not checked
//
// Blanks around entries are ignored; "" is the default policy. An entry
// that is none of these is an error naming it, so a typo stops the process
// at start instead of silently allowing less (or more) than meant.
func Parse(s string) (Policy, error) {
	var p Policy
	for _, raw := range strings.Split(s, ",") {
		e := strings.ToLower(strings.TrimSpace(raw))
		switch {
		case e == "":
		case e == "http":
			p.AllowHTTP = true
		case e == "https":
			// always allowed; accepted so that "http,https" reads naturally
		case strings.Contains(e, "/"):
			pf, err := netip.ParsePrefix(e)
			if err != nil {
				return Policy{}, fmt.Errorf("%s: entry %q is not a CIDR prefix (e.g. 10.0.0.0/8 or fd00::/8)", Setting, raw)
			}
			p.Prefixes = append(p.Prefixes, pf.Masked())
		default:
			if a, err := netip.ParseAddr(e); err == nil {
				if a.Zone() != "" {
					return Policy{}, fmt.Errorf("%s: entry %q has a zone; give the address without it", Setting, raw)
				}
				p.Prefixes = append(p.Prefixes, netip.PrefixFrom(a, a.BitLen()))
				continue
			}
			h := strings.TrimSuffix(e, ".")
			if !hostName.MatchString(h) || len(h) > 253 {
				return Policy{}, fmt.Errorf("%s: entry %q is not http, a CIDR prefix, an IP address or a host name", Setting, raw)
			}
			p.Hosts = append(p.Hosts, h)
		}
	}
	return p, nil
}

// String writes the policy as Parse reads it.
func (p Policy) String() string {
	var parts []string
	if p.AllowHTTP {
		parts = append(parts, "http")
	}
	for _, pf := range p.Prefixes {
		parts = append(parts, pf.String())
	}
	parts = append(parts, p.Hosts...)
	return strings.Join(parts, ",")
}

// hostAllowed reports whether host (a name from a URL) is one of the
// policy's host names.
func (p Policy) hostAllowed(host string) bool {
	return slices.Contains(p.Hosts, strings.TrimSuffix(strings.ToLower(host), "."))
}

// RefusedError is a destination the policy refuses.
type RefusedError struct {
	Addr   netip.Addr
	Reason string // what kind of address it is, e.g. "loopback"
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("egress refused: %s is %s (not allowed by %s)", e.Addr, e.Reason, Setting)
}

// CheckIP refuses an address that is not public unicast, unless the policy
// allows it. Addresses that embed an IPv4 address (IPv4-mapped, NAT64,
// 6to4) are judged by the IPv4 address they lead to.
func (p Policy) CheckIP(a netip.Addr) error {
	a = a.WithZone("")
	if !a.IsValid() {
		return &RefusedError{Addr: a, Reason: "not an address"}
	}
	v4, form := embedded(a)
	for _, pf := range p.Prefixes {
		if pf.Contains(a) || (v4.IsValid() && pf.Contains(v4)) {
			return nil
		}
	}
	if v4.IsValid() {
		if r := reserved(v4); r != "" {
			return &RefusedError{Addr: a, Reason: fmt.Sprintf("the %s form of %s, %s", form, v4, r)}
		}
		return nil
	}
	if r := reserved(a); r != "" {
		return &RefusedError{Addr: a, Reason: r}
	}
	return nil
}

// embedded returns the IPv4 address an IPv6 address leads to, and the name
// of the form, for the forms that embed one: IPv4-mapped (::ffff:a.b.c.d),
// the well-known NAT64 prefix 64:ff9b::/96 and 6to4 (2002:aabb:ccdd::/48).
func embedded(a netip.Addr) (netip.Addr, string) {
	if a.Is4() {
		return netip.Addr{}, ""
	}
	b := a.As16()
	switch {
	case a.Is4In6():
		return a.Unmap(), "IPv4-mapped"
	case nat64.Contains(a):
		return netip.AddrFrom4([4]byte(b[12:16])), "NAT64"
	case sixToFour.Contains(a):
		return netip.AddrFrom4([4]byte(b[2:6])), "6to4"
	}
	return netip.Addr{}, ""
}

var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
	global6   = netip.MustParsePrefix("2000::/3")
)

// reservedRange is an address range no webhook may reach by default.
type reservedRange struct {
	prefix netip.Prefix
	name   string
}

// reservedRanges, most specific first within each family (the first match
// names the address). IPv6 outside 2000::/3 is refused as a whole below.
var reservedRanges = func() []reservedRange {
	var rs []reservedRange
	for _, r := range [][2]string{
		{"0.0.0.0/8", "an unspecified or \"this network\" address"},
		{"10.0.0.0/8", "a private address (RFC 1918)"},
		{"100.64.0.0/10", "a shared carrier-grade NAT address (RFC 6598)"},
		{"127.0.0.0/8", "a loopback address"},
		{"169.254.0.0/16", "a link-local address (cloud metadata lives here)"},
		{"172.16.0.0/12", "a private address (RFC 1918)"},
		{"192.0.0.0/24", "an IETF protocol assignment"},
		{"192.0.2.0/24", "a documentation address"},
		{"192.88.99.0/24", "a 6to4 relay anycast address"},
		{"192.168.0.0/16", "a private address (RFC 1918)"},
		{"198.18.0.0/15", "a benchmarking address"},
		{"198.51.100.0/24", "a documentation address"},
		{"203.0.113.0/24", "a documentation address"},
		{"224.0.0.0/4", "a multicast address"},
		{"255.255.255.255/32", "the broadcast address"},
		{"240.0.0.0/4", "a reserved address"},
		{"::/128", "the unspecified address"},
		{"::1/128", "a loopback address"},
		{"::/96", "an IPv4-compatible address (deprecated)"},
		{"64:ff9b:1::/48", "a local-use NAT64 address"},
		{"100::/64", "a discard-only address"},
		{"2001::/32", "a Teredo address"},
		{"2001:2::/48", "a benchmarking address"},
		{"2001:10::/28", "an ORCHID address"},
		{"2001:20::/28", "an ORCHID address"},
		{"2001:db8::/32", "a documentation address"},
		{"3fff::/20", "a documentation address"},
		{"5f00::/16", "a segment routing (SRv6) address"},
		{"fc00::/7", "a unique-local address"},
		{"fe80::/10", "a link-local address"},
		{"fec0::/10", "a site-local address (deprecated)"},
		{"ff00::/8", "a multicast address"},
	} {
		rs = append(rs, reservedRange{netip.MustParsePrefix(r[0]), r[1]})
	}
	return rs
}()

// reserved names the kind of a non-public address, or returns "" for a
// public unicast one.
func reserved(a netip.Addr) string {
	for _, r := range reservedRanges {
		if r.prefix.Contains(a) {
			return r.name
		}
	}
	if a.Is6() && !global6.Contains(a) {
		return "outside IPv6 global unicast (2000::/3)"
	}
	return ""
}

// URLError says why a webhook URL is refused; its message completes
// "webhook_url ..." in a field error.
type URLError struct{ Reason string }

func (e *URLError) Error() string { return e.Reason }

// CheckURL checks what a URL says by itself: https (or http, if allowed),
// no credentials, a host, and, when the host is a literal address or a
// loopback name, that the policy allows it. Names are checked again, with
// the addresses they resolve to, when the worker connects.
func (p Policy) CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() {
		return &URLError{"must be an absolute https URL"}
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !p.AllowHTTP {
			return &URLError{fmt.Sprintf("must be an https URL (plain http is allowed only when %s includes http)", Setting)}
		}
	default:
		return &URLError{"must be an https URL"}
	}
	if u.User != nil {
		return &URLError{"must not carry credentials (user:password@); receivers authenticate events by their signature"}
	}
	host := u.Hostname()
	if host == "" {
		return &URLError{"must name a host"}
	}
	if p.hostAllowed(host) {
		return nil
	}
	if a, err := netip.ParseAddr(host); err == nil {
		if a.Zone() != "" {
			return &URLError{"must not name an address with a zone"}
		}
		if err := p.CheckIP(a); err != nil {
			var re *RefusedError
			errors.As(err, &re)
			return &URLError{fmt.Sprintf("points at %s, %s (not allowed by %s)", a, re.Reason, Setting)}
		}
		return nil
	}
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return &URLError{fmt.Sprintf("points at %s, a loopback name (not allowed by %s)", host, Setting)}
	}
	if numericHost(h) {
		// 127.1, 2130706433, 0x7f.0.0.1: no DNS name, but some resolvers
		// read them as addresses (the dial-time check would still apply).
		return &URLError{fmt.Sprintf("names %s, which is neither a host name nor an address in standard form", host)}
	}
	return nil
}

// numericHost reports whether a host that is not a standard address looks
// like a numeric one: its last label is all digits or hexadecimal with 0x
// (no top-level domain is).
func numericHost(h string) bool {
	last := h[strings.LastIndex(h, ".")+1:]
	if last == "" {
		return false
	}
	if strings.HasPrefix(last, "0x") {
		return true
	}
	return strings.Trim(last, "0123456789") == ""
}

// Endpoint is a URL's scheme, host and port, lowercase, the key its
// deliveries share (a circuit breaker's, say): "https://example.com:443".
func Endpoint(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = "443"
		if u.Scheme == "http" {
			port = "80"
		}
	}
	return strings.ToLower(u.Scheme) + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// ParseProxy reads an egress proxy URL (CARRYOVER_WEBHOOK_PROXY): http or
// https, with a host; "" is no proxy.
func ParseProxy(s string) (*url.URL, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errors.New("CARRYOVER_WEBHOOK_PROXY must be an http:// or https:// proxy URL with a host")
	}
	return u, nil
}
