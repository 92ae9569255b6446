package api_test

import (
	"context"

	"github.com/jackc/pgx/v5"
)

func countJobs(n *int) error {
	conn, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	return conn.QueryRow(context.Background(), `SELECT count(*) FROM jobs`).Scan(n)
}
