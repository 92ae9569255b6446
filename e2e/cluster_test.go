package e2e_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/carryover/carryover/client"
)

// Jobs run on a Redis Cluster (REDIS_URL=redis-cluster://…): three masters
// on loopback, the hash slots spread over them. asynq keeps each queue's
// keys in one slot ({queue} hash tags); the chunk lanes, the merge and the
// webhook queues land on different nodes, and every job still succeeds —
// one whose first task was lost too, resumed by the reconciler.
func TestClusterRunsJobs(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a three-node Redis Cluster")
	}
	if _, err := exec.LookPath("redis-cli"); err != nil {
		t.Skip("redis-cli is not installed (make services installs it)")
	}
	ctx := context.Background()
	dir := t.TempDir()
	var addrs []string
	var nodes []*redisServer
	for i := range 3 {
		name := fmt.Sprintf("node%d", i)
		// The cluster bus listens on the client port + 10000 (cluster-port
		// sets it only from Redis 7): a client port with that one free too.
		wd := filepath.Join(dir, name)
		if err := os.MkdirAll(wd, 0o700); err != nil {
			t.Fatal(err)
		}
		n := startRedisProcess(t, name, clusterPort, func(port int) []string {
			return []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
				"--dir", wd, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"}
		})
		nodes = append(nodes, n)
		addrs = append(addrs, fmt.Sprintf("127.0.0.1:%d", n.port))
	}
	out, err := exec.Command("redis-cli", append(append([]string{"--cluster", "create"}, addrs...),
		"--cluster-replicas", "0", "--cluster-yes")...).CombinedOutput()
	if err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	waitFor(t, 20*time.Second, "the cluster never became ok", func() bool {
		for _, n := range nodes {
			info, _ := n.rdb.ClusterInfo(ctx).Result()
			if !strings.Contains(info, "cluster_state:ok") {
				return false
			}
		}
		return true
	})

	h := newHarness(t)
	h.cfg.RedisURL = "redis-cluster://" + strings.Join(addrs, ",")
	h.cfg.DBConns = 4
	c, err := client.New(ctx, client.Config{DatabaseURL: h.cfg.DatabaseURL, RedisURL: h.cfg.RedisURL,
		ChunkQueue: h.cfg.ChunkQueue, WebhookAllow: h.cfg.WebhookAllow, MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	h.client = c
	var all []job
	for i := range 6 {
		// A tenant each, so the jobs take different chunk lanes.
		if _, _, err := h.store.CreateAPIKey(ctx, fmt.Sprintf("tenant-%d", i)); err != nil {
			t.Fatal(err)
		}
		all = append(all, h.enqueue(fmt.Sprintf("format=jsonl size=3000 seed=%d", 200+i),
			client.Request{Format: "jsonl", Tenant: fmt.Sprintf("tenant-%d", i)}))
	}
	// One job's first task is lost before any worker sees it: the
	// reconciler finds that out through the cluster and queues it again.
	lost := all[0]
	queues, err := c.Inspector().Queues()
	if err != nil {
		t.Fatal(err)
	}
	deleted := false
	for _, q := range queues {
		if c.Inspector().DeleteTask(q, "job:"+lost.id+":chunk:0") == nil {
			deleted = true
		}
	}
	if !deleted {
		t.Fatalf("job %s: its first task is in none of the queues %v", lost.id, queues)
	}
	h.startWorker()
	for _, j := range all {
		st := h.wait(j.id, 30*time.Second)
		if st.Status != "succeeded" {
			t.Fatalf("job %s: %s (%s)", j.id, st.Status, st.Error)
		}
		res, err := h.client.Result(ctx, j.id)
		if err != nil || res.Content != j.doc {
			t.Fatalf("job %s: document differs (%v)", j.id, err)
		}
	}
	// The reconciler tells a dead worker's task by the servers asynq lists
	// (their keys are spread over the nodes too): both of the worker's.
	if servers, err := c.Inspector().Servers(); err != nil || len(servers) != 2 {
		t.Fatalf("asynq lists %d servers on the cluster (%v), want the worker's 2", len(servers), err)
	}
	// The tasks really were spread over the cluster: more than one node
	// holds asynq keys.
	holding := 0
	for _, n := range nodes {
		if keys, _ := n.rdb.Keys(ctx, "asynq:{"+h.cfg.ChunkQueue+"*").Result(); len(keys) > 0 {
			holding++
		}
	}
	if holding < 2 {
		t.Fatalf("the queues' keys are on %d node(s) of 3", holding)
	}
}

// clusterPort is a loopback port below 55536 that is free, and so is the
// one 10000 above it (the cluster bus's), a moment ago.
func clusterPort(t *testing.T) int {
	t.Helper()
	for range 100 {
		port := 20000 + rand.IntN(35000)
		a, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		b, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port+10000))
		a.Close()
		if err != nil {
			continue
		}
		b.Close()
		return port
	}
	t.Fatal("no free port pair for a cluster node")
	return 0
}
