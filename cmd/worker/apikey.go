package main

import (
	"context"
	"flag"
	"fmt"
	"io"

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
func runAPIKey(args []string, stdout, stderr io.Writer) error {
	cfg := config.FromEnv()
	if len(args) == 0 || (args[0] != "create" && args[0] != "revoke") {
		return fmt.Errorf("usage: worker apikey create --tenant NAME | worker apikey revoke [--tenant NAME] PREFIX|KEY")
	}
	sub, args := args[0], args[1:]
	fs := flag.NewFlagSet("worker apikey "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg.RegisterStoreFlags(fs)
	tenant := fs.String("tenant", "", "create: the tenant the key belongs to (created if new; default \"default\"); revoke: only a key of this tenant")
	if err := fs.Parse(args); err != nil {
		return err
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
		if *tenant == "" {
			*tenant = "default"
		}
		key, prefix, err := st.CreateAPIKey(ctx, *tenant)
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "API key %s… for tenant %s (shown once; only its hash is stored)\n", prefix, *tenant)
		fmt.Fprintln(stdout, key)
		return nil
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("usage: worker apikey revoke [--tenant NAME] PREFIX|KEY")
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
