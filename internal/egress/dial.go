package egress

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"syscall"
	"time"
)

// Resolver looks up a host's addresses; *net.Resolver is one. Tests give
// their own, so that no name leaves the machine.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Dialer connects only to addresses the policy allows. It resolves the host
// itself and dials each address through a net.Dialer whose Control checks
// the address the socket is about to connect to: a refused address is never
// sent a packet, whatever name led to it.
type Dialer struct {
	Policy   Policy
	Resolver Resolver      // nil: net.DefaultResolver
	Timeout  time.Duration // connect timeout of each address; 0: 5s
	// guard, in tests, sees each address the policy let through, last
	// before the connect: a test that must never reach beyond loopback
	// refuses the rest here, so even a broken policy sends them nothing.
	guard func(address string) error
}

// control is the net.Dialer Control: it runs after the socket is created and
// before it connects, with the resolved address.
func (d *Dialer) control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("egress refused: cannot read the address %q: %w", address, err)
	}
	if err := d.Policy.CheckIP(ap.Addr()); err != nil {
		return err
	}
	if d.guard != nil {
		return d.guard(address)
	}
	return nil
}

// DialContext connects to addr ("host:port"): the host is resolved and each
// of its addresses dialed in turn, checked (unless the host is on the
// policy's host list); an error says why every one failed.
func (d *Dialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	nd := net.Dialer{Timeout: cmp.Or(d.Timeout, 5*time.Second)}
	if !d.Policy.hostAllowed(host) {
		nd.Control = d.control
	}
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else {
		r := d.Resolver
		if r == nil {
			r = net.DefaultResolver
		}
		ipNet := "ip"
		switch network {
		case "tcp4":
			ipNet = "ip4"
		case "tcp6":
			ipNet = "ip6"
		}
		if addrs, err = r.LookupNetIP(ctx, ipNet, host); err != nil {
			return nil, err
		}
		if len(addrs) == 0 {
			return nil, fmt.Errorf("egress: %s has no addresses", host)
		}
	}
	var errs []error
	for _, a := range addrs {
		c, err := nd.DialContext(ctx, network, net.JoinHostPort(a.String(), port))
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("dial %s: %w", host, errors.Join(errs...))
}

// ClientConfig configures NewClient.
type ClientConfig struct {
	Policy Policy
	// Proxy, when set, carries every request (CONNECT for https). The proxy
	// is the operator's and trusted to do its own filtering: connections to
	// it are not checked (the URL checks still apply to each webhook).
	// Without it no proxy is used, whatever HTTPS_PROXY says, so that the
	// environment cannot route around the address checks.
	Proxy *url.URL
	// Timeout bounds a whole delivery: connect, TLS, request, answer and
	// reading what is kept of its body; 0: 10s.
	Timeout time.Duration
	// ResponseHeaderTimeout bounds the wait for the answer's headers once
	// the request is sent; 0: 5s.
	ResponseHeaderTimeout time.Duration
	Resolver              Resolver // nil: net.DefaultResolver
}

// NewClient returns an HTTP client for webhooks: every connection goes
// through a Dialer (or to the proxy), redirects are not followed (the 3xx
// answer is returned as it is), and every delivery is bounded in time.
func NewClient(c ClientConfig) *http.Client { return newClient(c, nil) }

// newClient is NewClient with a dial guard (see Dialer.guard).
func newClient(c ClientConfig, guard func(string) error) *http.Client {
	d := &Dialer{Policy: c.Policy, Resolver: c.Resolver, guard: guard}
	t := &http.Transport{
		DialContext:            d.DialContext,
		TLSHandshakeTimeout:    5 * time.Second,
		ResponseHeaderTimeout:  cmp.Or(c.ResponseHeaderTimeout, 5*time.Second),
		MaxResponseHeaderBytes: 64 << 10,
		MaxIdleConns:           64,
		MaxIdleConnsPerHost:    2,
		IdleConnTimeout:        30 * time.Second,
		ForceAttemptHTTP2:      true,
	}
	if c.Proxy != nil {
		t.Proxy = http.ProxyURL(c.Proxy)
		t.DialContext = (&net.Dialer{Timeout: 5 * time.Second}).DialContext
	}
	return &http.Client{
		Transport: t,
		Timeout:   cmp.Or(c.Timeout, 10*time.Second),
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}
