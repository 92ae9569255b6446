package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/carryover/carryover/carryovertype"
	"github.com/carryover/carryover/internal/cmdline"
	"github.com/carryover/carryover/internal/config"
	"github.com/carryover/carryover/internal/store"
)

// runAPIKey creates or revokes API keys:
//
//	worker apikey create --tenant NAME   prints a new key once (only its hash is stored)
//	worker apikey revoke [--tenant NAME] PREFIX|KEY
//	                                     revokes the one live key with that prefix
//	                                     (or that whole key); a prefix several keys
//	                                     share revokes nothing
//
// create requires --tenant: a key is a tenant's identity at the API, and a
// key made for "default" by omission would see every job the CLI and the Go
// client enqueue without a tenant. A malformed tenant is refused with the
// rule (carryovertype.TenantRule) before anything is stored.
func runAPIKey(args []string, stdout, stderr io.Writer) error {
	cfg := config.FromEnv()
	const use = "worker apikey create --tenant NAME | worker apikey revoke [--tenant NAME] PREFIX|KEY"
	if len(args) == 0 {
		return cmdline.Usagef("apikey: give a subcommand: %s", use)
	}
	sub, args := args[0], args[1:]
	if sub != "create" && sub != "revoke" {
		return cmdline.Unknown("apikey", sub, []string{"create", "revoke"})
	}
	fs := flag.NewFlagSet("worker apikey "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg.RegisterStoreFlags(fs)
	tenant := fs.String("tenant", "", "create: the tenant the key belongs to, created if new (required; \"default\" is the tenant of jobs enqueued without one); revoke: only a key of this tenant")
	if err := cmdline.Parse(fs, args); err != nil {
		return err
	}
	switch {
	case sub == "create" && *tenant == "":
		return cmdline.Usagef("apikey create: --tenant is required: the tenant whose jobs the key may see and make (--tenant default for the jobs the CLI and the Go client enqueue without --tenant)")
	case *tenant != "" && !carryovertype.ValidTenant(*tenant):
		return cmdline.Usagef("--tenant %q: a tenant must be %s", *tenant, carryovertype.TenantRule)
	case sub == "create" && fs.NArg() > 0:
		return cmdline.Usagef("apikey create takes no arguments, got %q", fs.Args())
	case sub == "revoke" && fs.NArg() != 1:
		return cmdline.Usagef("apikey revoke: give one PREFIX or KEY, got %d arguments", fs.NArg())
	}
	ctx := context.Background()
	if err := store.Migrate(cfg.DatabaseURL); err != nil {
		return err
	}
	st, err := store.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	defer st.Close()
	if sub == "create" {
		key, prefix, err := st.CreateAPIKey(ctx, *tenant)
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "API key %s… for tenant %s (shown once; only its hash is stored)\n", prefix, *tenant)
		fmt.Fprintln(stdout, key)
		return nil
	}
	n, err := st.RevokeAPIKey(ctx, fs.Arg(0), *tenant)
	if err != nil {
		return err
	}
	scope := ""
	if *tenant != "" {
		scope = " of tenant " + *tenant
	}
	switch {
	case n == 0:
		return fmt.Errorf("no live key%s with prefix %q", scope, fs.Arg(0))
	case n > 1:
		return fmt.Errorf("%d live keys%s share prefix %q; nothing revoked: give --tenant or the whole key", n, scope, fs.Arg(0))
	}
	fmt.Fprintln(stdout, "revoked", fs.Arg(0))
	return nil
}
