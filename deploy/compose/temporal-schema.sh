#!/bin/sh
# One-shot: create and migrate Temporal's two PostgreSQL databases with temporal-sql-tool
# (run by the temporal-schema service of deploy/docker-compose.yml in temporalio/admin-tools,
# which ships the tool and the schema files of its release). Safe to re-run: a database that
# already exists is not set up again, and update-schema only applies missing versions.
# The same steps for a production server: deploy/README.md §1.
set -eu
: "${POSTGRES_SEEDS:?}" "${POSTGRES_USER:?}" "${SQL_PASSWORD:?}"
PORT="${DB_PORT:-5432}"
SCHEMA_DIR=/etc/temporal/schema/postgresql/v12

sql() {
  temporal-sql-tool --plugin postgres12 --ep "$POSTGRES_SEEDS" -p "$PORT" \
    -u "$POSTGRES_USER" "$@"
}

for pair in temporal:temporal temporal_visibility:visibility; do
  db="${pair%%:*}"
  schema="${pair#*:}"
  if sql --db "$db" create; then
    sql --db "$db" setup-schema -v 0.0
  else
    echo "database $db exists: not set up again"
  fi
  sql --db "$db" update-schema -d "$SCHEMA_DIR/$schema/versioned"
done
echo "Temporal schemas up to date"
