package redisconn_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/carryover/carryover/internal/redisconn"
)

func TestParseSentinel(t *testing.T) {
	cases := []struct {
		name, url string
		want      redis.FailoverOptions
		tls       bool
	}{
		{"master in the path", "redis-sentinel://127.0.0.1:26379,127.0.0.1:26380/mymaster",
			redis.FailoverOptions{MasterName: "mymaster", SentinelAddrs: []string{"127.0.0.1:26379", "127.0.0.1:26380"}}, false},
		{"password, db in the path", "redis-sentinel://:s3cret@127.0.0.1:26379/mymaster/2",
			redis.FailoverOptions{MasterName: "mymaster", SentinelAddrs: []string{"127.0.0.1:26379"}, Password: "s3cret", DB: 2}, false},
		{"db as an option", "redis-sentinel://:pass@127.0.0.1:26379,127.0.0.1:26380/mymaster?db=3",
			redis.FailoverOptions{MasterName: "mymaster", SentinelAddrs: []string{"127.0.0.1:26379", "127.0.0.1:26380"}, Password: "pass", DB: 3}, false},
		{"asynq's form: master as an option", "redis-sentinel://10.0.0.1:26379,10.0.0.2:26379?master=mymaster",
			redis.FailoverOptions{MasterName: "mymaster", SentinelAddrs: []string{"10.0.0.1:26379", "10.0.0.2:26379"}}, false},
		{"default port, IPv6", "redis-sentinel://localhost,[::1],[::1]:26380/m",
			redis.FailoverOptions{MasterName: "m", SentinelAddrs: []string{"localhost:26379", "[::1]:26379", "[::1]:26380"}}, false},
		{"user, escaped password, sentinel credentials", "redis-sentinel://app:p%40ss%2Fw@127.0.0.1:26379/mymaster?sentinel_username=sen&sentinel_password=sp",
			redis.FailoverOptions{MasterName: "mymaster", SentinelAddrs: []string{"127.0.0.1:26379"}, Username: "app", Password: "p@ss/w",
				SentinelUsername: "sen", SentinelPassword: "sp"}, false},
		{"go-redis options", "redis-sentinel://127.0.0.1:26379/mymaster?dial_timeout=2s&pool_size=40&max_retries=5",
			redis.FailoverOptions{MasterName: "mymaster", SentinelAddrs: []string{"127.0.0.1:26379"}, DialTimeout: 2 * time.Second, PoolSize: 40, MaxRetries: 5}, false},
		{"TLS", "rediss-sentinel://a.example:26379,b.example:26379/mymaster",
			redis.FailoverOptions{MasterName: "mymaster", SentinelAddrs: []string{"a.example:26379", "b.example:26379"}}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o, err := redisconn.Parse(c.url)
			if err != nil {
				t.Fatal(err)
			}
			f := o.Failover
			if f == nil || o.Single != nil || o.Cluster != nil {
				t.Fatalf("not a failover client: %+v", o)
			}
			got := redis.FailoverOptions{MasterName: f.MasterName, SentinelAddrs: f.SentinelAddrs, Username: f.Username, Password: f.Password,
				SentinelUsername: f.SentinelUsername, SentinelPassword: f.SentinelPassword, DB: f.DB,
				DialTimeout: f.DialTimeout, PoolSize: f.PoolSize, MaxRetries: f.MaxRetries}
			if s, w := describe(got), describe(c.want); s != w {
				t.Fatalf("got  %s\nwant %s", s, w)
			}
			if (f.TLSConfig != nil) != c.tls {
				t.Fatalf("TLS %v, want %v", f.TLSConfig != nil, c.tls)
			}
			// Each sentinel and the master it names are checked against
			// their own host name, never the first host's.
			if f.TLSConfig != nil && f.TLSConfig.ServerName != "" {
				t.Fatalf("TLS server name pinned to %q", f.TLSConfig.ServerName)
			}
			if strings.Contains(o.String(), "pass") || strings.Contains(o.String(), "s3cret") {
				t.Fatalf("String shows a credential: %s", o)
			}
		})
	}
}

func describe(o redis.FailoverOptions) string {
	return strings.Join([]string{"master=" + o.MasterName, "addrs=" + strings.Join(o.SentinelAddrs, ","), "user=" + o.Username,
		"password=" + o.Password, "sentinel_user=" + o.SentinelUsername, "sentinel_password=" + o.SentinelPassword,
		"db=" + strconv.Itoa(o.DB), "dial=" + o.DialTimeout.String(), "pool=" + strconv.Itoa(o.PoolSize), "retries=" + strconv.Itoa(o.MaxRetries)}, " ")
}

func TestParseCluster(t *testing.T) {
	cases := []struct {
		url      string
		addrs    string
		user, pw string
		pool     int
		tls      bool
	}{
		{"redis-cluster://127.0.0.1:7000,127.0.0.1:7001,127.0.0.1:7002", "127.0.0.1:7000,127.0.0.1:7001,127.0.0.1:7002", "", "", 0, false},
		{"redis-cluster://:pw@node1,node2:7001", "node1:6379,node2:7001", "", "pw", 0, false},
		{"redis-cluster://app:pw@127.0.0.1:7000/0?pool_size=20", "127.0.0.1:7000", "app", "pw", 20, false},
		{"rediss-cluster://n1.example:6380,n2.example:6380", "n1.example:6380,n2.example:6380", "", "", 0, true},
	}
	for _, c := range cases {
		o, err := redisconn.Parse(c.url)
		if err != nil {
			t.Fatalf("%s: %v", c.url, err)
		}
		k := o.Cluster
		if k == nil || o.Single != nil || o.Failover != nil {
			t.Fatalf("%s: not a cluster client", c.url)
		}
		if got := strings.Join(k.Addrs, ","); got != c.addrs || k.Username != c.user || k.Password != c.pw || k.PoolSize != c.pool {
			t.Fatalf("%s: addrs %s user %q password %q pool %d", c.url, got, k.Username, k.Password, k.PoolSize)
		}
		if (k.TLSConfig != nil) != c.tls || (k.TLSConfig != nil && k.TLSConfig.ServerName != "") {
			t.Fatalf("%s: TLS config %+v", c.url, k.TLSConfig)
		}
	}
}

func TestParseSingle(t *testing.T) {
	o, err := redisconn.Parse("redis://:pw@127.0.0.1:6380/4?pool_size=7")
	if err != nil {
		t.Fatal(err)
	}
	if s := o.Single; s == nil || s.Addr != "127.0.0.1:6380" || s.DB != 4 || s.Password != "pw" || s.PoolSize != 7 {
		t.Fatalf("%+v", o.Single)
	}
	o.MinPoolSize(30)
	if o.Single.PoolSize != 30 {
		t.Fatalf("pool %d after MinPoolSize(30)", o.Single.PoolSize)
	}
}

// Bad URLs are refused with an error that names what is wrong and never
// repeats the password.
func TestParseRefuses(t *testing.T) {
	cases := []struct{ url, want string }{
		{"127.0.0.1:6379", "scheme"},
		{"memcached://127.0.0.1", "unknown scheme"},
		{"redis-sentinel://:hunter2@127.0.0.1:26379", "no master name"},
		{"redis-sentinel://:hunter2@127.0.0.1:26379/m/x", "db"},
		{"redis-sentinel://:hunter2@127.0.0.1:26379/m/1/2", "path"},
		{"redis-sentinel://:hunter2@127.0.0.1:26379/m?master=n", "master name given twice"},
		{"redis-sentinel://:hunter2@127.0.0.1:26379,/m", "empty host"},
		{"redis-sentinel://:hunter2@127.0.0.1:99999/m", "port"},
		{"redis-sentinel://:hunter2@::1:26379/m", "IPv6"},
		{"redis-sentinel://:hunter2@127.0.0.1:26379/m?password=x", "password"},
		{"redis-sentinel://:hunter2@127.0.0.1:26379/m?bogus=1", "bogus"},
		{"redis-sentinel://:hunter2@127.0.0.1:26379/m?skip_verify=true", "skip_verify"},       // TLS only
		{"redis-sentinel://:hunter2@127.0.0.1:26379/m?route_randomly=true", "route_randomly"}, // would panic in NewFailoverClient
		{"redis-sentinel://:hunter2@127.0.0.1:26379/m?replica_only=true", "master"},
		{"redis-cluster://:hunter2@127.0.0.1:7000?read_only=true", "master"},
		{"redis-cluster://:hunter2@127.0.0.1:7000/3", "database 0"},
		{"redis-cluster://:hunter2@127.0.0.1:7000?db=1", "database 0"},
		{"redis-cluster://:hunter2@127.0.0.1:7000?addr=127.0.0.1:7001", "addr"},
		{"redis://:hunter2@127.0.0.1:6379/x", "database"},
		{"redis://:hunter2@127.0.0.1:6379/%zz", ""},
	}
	for _, c := range cases {
		_, err := redisconn.Parse(c.url)
		if err == nil {
			t.Errorf("%s: accepted", c.url)
			continue
		}
		if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "REDIS_URL") {
			t.Errorf("%s: error %q does not say %q", c.url, err, c.want)
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: error shows the password: %v", c.url, err)
		}
	}
}

// go-redis's messages reach the structured log, tagged as its own.
func TestLogger(t *testing.T) {
	var buf strings.Builder
	l := redisconn.Logger{Log: slog.New(slog.NewJSONHandler(&buf, nil))}
	l.Printf(context.Background(), "sentinel: new master=%q addr=%q", "mymaster", "127.0.0.1:6380")
	if got := buf.String(); !strings.Contains(got, `"msg":"sentinel: new master=\"mymaster\" addr=\"127.0.0.1:6380\""`) ||
		!strings.Contains(got, `"component":"go-redis"`) {
		t.Fatalf("log record %s", got)
	}
}

// asynqmon builds its clients from ConnOpt and panics unless each is a
// redis.UniversalClient; NewClient gives the client type for each form.
func TestClients(t *testing.T) {
	cases := []struct{ url, want string }{
		{"redis://127.0.0.1:6379/0", "*redis.Client"},
		{"redis-sentinel://127.0.0.1:26379/mymaster", "*redis.Client"},
		{"redis-cluster://127.0.0.1:7000,127.0.0.1:7001", "*redis.ClusterClient"},
	}
	for _, c := range cases {
		o, err := redisconn.Parse(c.url)
		if err != nil {
			t.Fatal(err)
		}
		rdb, ok := o.ConnOpt().MakeRedisClient().(redis.UniversalClient)
		if !ok {
			t.Fatalf("%s: ConnOpt makes no UniversalClient", c.url)
		}
		_ = rdb.Close()
		rdb = o.NewClient()
		if got := fmt.Sprintf("%T", rdb); got != c.want {
			t.Fatalf("%s: NewClient gives %s, want %s", c.url, got, c.want)
		}
		_ = rdb.Close()
	}
}

// go-redis's failed dials stay out of an info log (the caller reports the
// same error); its other messages, a failover's for one, stay in.
func TestLoggerLevels(t *testing.T) {
	t.Parallel()
	tests := []struct {
		format string
		shown  bool
	}{
		{"redis: connection pool: failed to dial after %d attempts: %v", false},
		{"sentinel: new master=%q addr=%q", true},
		{"redis: connection pool: failed to get a usable connection after %d attempts", true},
	}
	for _, tt := range tests {
		var b bytes.Buffer
		l := redisconn.Logger{Log: slog.New(slog.NewTextHandler(&b, &slog.HandlerOptions{Level: slog.LevelInfo}))}
		l.Printf(context.Background(), tt.format, 5, "x")
		if shown := b.Len() > 0; shown != tt.shown {
			t.Errorf("%q: logged at info %v, want %v", tt.format, shown, tt.shown)
		}
	}
}
