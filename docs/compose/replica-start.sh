#!/bin/bash
# The replica: on first start, a base backup of the primary written with -R (standby.signal and
# primary_conninfo), then a hot standby streaming from it. Later starts just resume streaming.
set -euo pipefail
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  until pg_basebackup --host=postgres --username=replicator --pgdata="$PGDATA" --write-recovery-conf --wal-method=stream --checkpoint=fast; do
    echo "waiting for the primary..."; sleep 2
  done
  chmod 700 "$PGDATA"
fi
exec postgres -c hot_standby=on
