// Package redisconn turns REDIS_URL into a Redis client, so every process
// (worker, API, Go client, dashboard, tests) reaches the same deployment the
// same way: one server, a Sentinel-monitored master with automatic failover,
// or a Redis Cluster.
//
// The forms:
//
//	redis://[[user]:password@]host[:port][/db][?option=value…]       one server (go-redis's redis.ParseURL)
//	rediss://…                                                      the same over TLS
//	unix://[[user]:password@]/path/to/redis.sock[?db=N]              one server over a Unix socket
//	redis-sentinel://[[user]:password@]host:port[,host:port…]/master[/db][?option=value…]
//	rediss-sentinel://…                                             the same over TLS (sentinels and servers)
//	redis-cluster://[[user]:password@]host:port[,host:port…][?option=value…]
//	rediss-cluster://…                                              the same over TLS
//
// In every form the user and password are the data servers' (the master and
// its replicas, or the cluster's nodes), as in redis://. Sentinels that
// require a password of their own take it as the options sentinel_password
// (and sentinel_username). The master name may also be given as the option
// master (asynq's redis-sentinel form), the database as the option db. A
// sentinel's port defaults to 26379, a cluster node's to 6379. The other
// options are go-redis's, snake-cased (dial_timeout=3s, pool_size=50,
// read_timeout=5s, max_retries=5, skip_verify=true for TLS, …); an unknown
// one is an error, and so are those that send commands to replicas
// (replica_only, route_by_latency, route_randomly, read_only): asynq writes,
// and the reconciler must read what was written.
package redisconn

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
)

// Options is a parsed REDIS_URL: exactly one of its fields is set.
type Options struct {
	Single   *redis.Options
	Failover *redis.FailoverOptions
	Cluster  *redis.ClusterOptions
}

// Default ports of the multi-host forms.
const (
	DefaultSentinelPort = "26379"
	DefaultClusterPort  = "6379"
)

// Parse reads a REDIS_URL in any of the package's forms. Its errors never
// repeat the URL, which may hold a password.
func Parse(raw string) (*Options, error) {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return nil, errors.New("REDIS_URL: want scheme://…, one of redis, rediss, unix, redis-sentinel, rediss-sentinel, redis-cluster, rediss-cluster")
	}
	switch scheme {
	case "redis", "rediss", "unix":
		o, err := redis.ParseURL(raw)
		if err != nil {
			return nil, fmt.Errorf("REDIS_URL: %w", quiet(err))
		}
		return &Options{Single: o}, nil
	case "redis-sentinel", "rediss-sentinel":
		o, err := parseSentinel(scheme == "rediss-sentinel", rest)
		if err != nil {
			return nil, fmt.Errorf("REDIS_URL (%s): %w", scheme, err)
		}
		return &Options{Failover: o}, nil
	case "redis-cluster", "rediss-cluster":
		o, err := parseCluster(scheme == "rediss-cluster", rest)
		if err != nil {
			return nil, fmt.Errorf("REDIS_URL (%s): %w", scheme, err)
		}
		return &Options{Cluster: o}, nil
	}
	return nil, fmt.Errorf("REDIS_URL: unknown scheme %q; want redis, rediss, unix, redis-sentinel, rediss-sentinel, redis-cluster or rediss-cluster", scheme)
}

// multi is the common part of the multi-host forms: the hosts, the
// data servers' credentials, the path and the options.
type multi struct {
	addrs          []string
	user, password string
	path           []string
	query          url.Values
}

// parseMulti splits rest (what follows "scheme://") itself: url.Parse
// takes one host, and a list of bracketed IPv6 addresses is not one.
func parseMulti(rest, defaultPort string) (multi, error) {
	var m multi
	authority, tail := rest, ""
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority, tail = rest[:i], rest[i:]
	}
	hosts := authority
	if i := strings.LastIndex(authority, "@"); i >= 0 {
		hosts = authority[i+1:]
		// The userinfo, and everything after the hosts, go through url.Parse
		// on a stand-in host, so escapes work as in redis://.
		tail = authority[:i+1] + "stand-in" + tail
	} else {
		tail = "stand-in" + tail
	}
	u, err := url.Parse("x://" + tail)
	if err != nil {
		return m, quiet(err)
	}
	if u.Fragment != "" {
		return m, errors.New("a fragment (#…) is not part of the form")
	}
	if u.User != nil {
		m.user = u.User.Username()
		m.password, _ = u.User.Password()
	}
	for _, h := range strings.Split(hosts, ",") {
		addr, err := hostPort(h, defaultPort)
		if err != nil {
			return m, err
		}
		m.addrs = append(m.addrs, addr)
	}
	for _, s := range strings.Split(strings.Trim(u.Path, "/"), "/") {
		if s != "" {
			m.path = append(m.path, s)
		}
	}
	m.query = u.Query()
	for _, k := range []string{"addr", "master_name", "username", "password"} {
		if m.query.Has(k) {
			return m, fmt.Errorf("option %s is not accepted: give the hosts before the path and the credentials before the @", k)
		}
	}
	// asynq's scripts write, and what the reconciler reads must be what
	// they wrote: every command goes to a master, never to a replica that
	// may lag (go-redis's NewFailoverClient even panics on the route_*
	// options).
	for _, k := range []string{"replica_only", "route_by_latency", "route_randomly", "read_only", "use_disconnected_replicas"} {
		if m.query.Has(k) {
			return m, fmt.Errorf("option %s is not accepted: carryover reads and writes on the master", k)
		}
	}
	return m, nil
}

// hostPort checks one host of a list and adds the default port.
func hostPort(h, defaultPort string) (string, error) {
	if h == "" {
		return "", errors.New("an empty host in the host list")
	}
	host, port, err := net.SplitHostPort(h)
	if err != nil {
		// No port: a name, an IPv4 address or a bracketed IPv6 one.
		host, port = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]"), defaultPort
		if strings.Contains(host, ":") && !strings.HasPrefix(h, "[") {
			return "", fmt.Errorf("host %q: write an IPv6 address in brackets, [addr]:port", h)
		}
	}
	if host == "" {
		return "", fmt.Errorf("host %q: no host name", h)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("host %q: port must be a number from 1 to 65535", h)
	}
	return net.JoinHostPort(host, port), nil
}

// goRedisURL is the multi-host form rewritten as go-redis's own URL (one
// host, the others as addr options), so its parser reads every option as
// it does for redis://.
func (m multi) goRedisURL(tls bool, query url.Values) string {
	q := url.Values{}
	for k, v := range query {
		q[k] = v
	}
	for _, a := range m.addrs[1:] {
		q.Add("addr", a)
	}
	scheme := "redis"
	if tls {
		scheme = "rediss"
	}
	return (&url.URL{Scheme: scheme, Host: m.addrs[0], RawQuery: q.Encode()}).String()
}

func parseSentinel(useTLS bool, rest string) (*redis.FailoverOptions, error) {
	m, err := parseMulti(rest, DefaultSentinelPort)
	if err != nil {
		return nil, err
	}
	q := m.query
	master, db := "", ""
	switch len(m.path) {
	case 0:
	case 1:
		master = m.path[0]
	case 2:
		master, db = m.path[0], m.path[1]
	default:
		return nil, errors.New("the path is /master-name or /master-name/db")
	}
	if v := q.Get("master"); v != "" {
		if master != "" && master != v {
			return nil, fmt.Errorf("master name given twice: %q in the path, %q as the option master", master, v)
		}
		master = v
	}
	if v := q.Get("db"); v != "" {
		if db != "" && db != v {
			return nil, fmt.Errorf("db given twice: %s in the path, %s as the option", db, v)
		}
		db = v
	}
	if master == "" {
		return nil, errors.New("no master name: redis-sentinel://host:26379[,host:port…]/master-name")
	}
	n := 0
	if db != "" {
		if n, err = strconv.Atoi(db); err != nil || n < 0 {
			return nil, fmt.Errorf("db %q: must be a database number, 0 or more", db)
		}
	}
	sentinelUser, sentinelPassword := q.Get("sentinel_username"), q.Get("sentinel_password")
	rq := url.Values{}
	for k, v := range q {
		switch k {
		case "master", "db", "sentinel_username", "sentinel_password":
		default:
			rq[k] = v
		}
	}
	o, err := redis.ParseFailoverURL(m.goRedisURL(useTLS, rq))
	if err != nil {
		return nil, quiet(err)
	}
	o.MasterName, o.DB = master, n
	o.Username, o.Password = m.user, m.password
	o.SentinelUsername, o.SentinelPassword = sentinelUser, sentinelPassword
	unpinServerName(o.TLSConfig)
	return o, nil
}

func parseCluster(useTLS bool, rest string) (*redis.ClusterOptions, error) {
	m, err := parseMulti(rest, DefaultClusterPort)
	if err != nil {
		return nil, err
	}
	if len(m.path) > 0 && !(len(m.path) == 1 && m.path[0] == "0") {
		return nil, errors.New("a cluster has only database 0: no path")
	}
	if v := m.query.Get("db"); v != "" && v != "0" {
		return nil, errors.New("a cluster has only database 0: no db option")
	}
	m.query.Del("db")
	o, err := redis.ParseClusterURL(m.goRedisURL(useTLS, m.query))
	if err != nil {
		return nil, quiet(err)
	}
	o.Username, o.Password = m.user, m.password
	unpinServerName(o.TLSConfig)
	return o, nil
}

// unpinServerName lets each TLS connection check the certificate against
// the host it dials (go-redis's dialer fills an empty ServerName from the
// address): go-redis's parsers pin the first host's name, which is wrong
// for every other sentinel, node and master.
func unpinServerName(c *tls.Config) {
	if c != nil {
		c.ServerName = ""
		c.MinVersion = max(c.MinVersion, tls.VersionTLS12)
	}
}

// quiet drops the URL that url.Parse's errors quote.
func quiet(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// MinPoolSize raises the connection pool (per node, for a cluster) to at
// least n.
func (o *Options) MinPoolSize(n int) {
	switch {
	case o.Single != nil:
		o.Single.PoolSize = max(o.Single.PoolSize, n)
	case o.Failover != nil:
		o.Failover.PoolSize = max(o.Failover.PoolSize, n)
	case o.Cluster != nil:
		o.Cluster.PoolSize = max(o.Cluster.PoolSize, n)
	}
}

// NewClient builds a client: a *redis.Client for one server or a
// Sentinel-monitored master (it follows the master through failovers), a
// *redis.ClusterClient for a cluster. Close it when done.
func (o *Options) NewClient() redis.UniversalClient {
	switch {
	case o.Failover != nil:
		c := *o.Failover
		return redis.NewFailoverClient(&c)
	case o.Cluster != nil:
		c := *o.Cluster
		return redis.NewClusterClient(&c)
	default:
		c := *o.Single
		return redis.NewClient(&c)
	}
}

// ConnOpt is the connection as asynq's RedisConnOpt, for what builds its
// own clients (asynqmon). asynq's own Redis*ClientOpt types drop most of
// go-redis's settings; this one builds NewClient's client.
func (o *Options) ConnOpt() asynq.RedisConnOpt { return connOpt{o} }

type connOpt struct{ o *Options }

// MakeRedisClient implements asynq.RedisConnOpt.
func (c connOpt) MakeRedisClient() any { return c.o.NewClient() }

// String describes the connection for logs, without credentials.
func (o *Options) String() string {
	switch {
	case o.Failover != nil:
		return fmt.Sprintf("sentinel master %s via %s db %d", o.Failover.MasterName, strings.Join(o.Failover.SentinelAddrs, ","), o.Failover.DB)
	case o.Cluster != nil:
		return "cluster via " + strings.Join(o.Cluster.Addrs, ",")
	default:
		return fmt.Sprintf("%s %s db %d", o.Single.Network, o.Single.Addr, o.Single.DB)
	}
}

// Open parses raw and returns its client.
func Open(raw string) (redis.UniversalClient, error) {
	o, err := Parse(raw)
	if err != nil {
		return nil, err
	}
	return o.NewClient(), nil
}

// Logger carries go-redis's own messages — the sentinel it asked, the new
// master after a failover, a node it cannot dial — to a structured log,
// instead of the standard library's log package on stderr. A process
// installs it once, at start: redis.SetLogger(redisconn.Logger{Log: log}).
type Logger struct{ Log *slog.Logger }

// Printf implements go-redis's logger interface. A failed dial is logged
// at debug level: the pool reports it again as the error of the call that
// dialled, which its caller logs or prints, so at info a Redis outage
// showed each failure twice, the pool's lines before the real error.
func (l Logger) Printf(ctx context.Context, format string, v ...any) {
	level := slog.LevelInfo
	if strings.HasPrefix(format, "redis: connection pool: failed to dial") {
		level = slog.LevelDebug
	}
	l.Log.Log(ctx, level, fmt.Sprintf(format, v...), "component", "go-redis")
}
