-- job_runs: one row per run of a scheduled job, on any host, as jobwatch's
-- mysql source reads it (see docs/mysql.md). MariaDB 10.3+ / MySQL 5.7+.
--
-- The usual pattern: the scheduler INSERTs a row when the run starts
-- (finished_at NULL, status NULL or 'running') and UPDATEs finished_at and
-- status when it ends; or INSERTs one finished row at the end.
--
--   INSERT INTO job_runs (job_name, started_at, host, pid)
--     VALUES ('nightly-backup', NOW(6), @@hostname, 12345);   -- keep LAST_INSERT_ID()
--   UPDATE job_runs SET finished_at = NOW(6), status = 'success' WHERE id = ?;
--
-- A skipped run (lock held, nothing to do) is a row with status 'skipped'.

CREATE TABLE IF NOT EXISTS job_runs (
  -- Read incrementally by id: it must be AUTO_INCREMENT (ids grow as rows
  -- are inserted). A row committed out of id order is found anyway.
  id          BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
  job_name    VARCHAR(191)    NOT NULL,
  -- Full precision: DATETIME(6). DATETIME carries no zone: jobwatch reads it
  -- in the zone of the DSN's loc parameter (UTC unless it says otherwise),
  -- so write UTC (UTC_TIMESTAMP(6)) or set loc to the zone you write in.
  started_at  DATETIME(6)     NOT NULL,
  finished_at DATETIME(6)     NULL,           -- NULL: the run is in progress
  status      VARCHAR(32)     NULL,           -- success | failure | failed | error | timeout | skipped
  host        VARCHAR(255)    NOT NULL DEFAULT '',
  pid         INT UNSIGNED    NULL,
  -- The run id of a check-in (?rid=) and the end of its output, written by
  -- check-ins with store: mysql (docs/checkins.md#high-availability). An
  -- exit_code INT column, if added, is written too.
  run_id      VARCHAR(64)     NULL,
  output      TEXT            NULL,
  PRIMARY KEY (id),
  -- A check-in retried, on any replica, is one row: run_id NULL (a run
  -- without one) never collides.
  UNIQUE KEY job_run (job_name, run_id),
  -- First start: each job's last success / failure / timeout,
  -- ORDER BY finished_at DESC LIMIT 1 per (job, status).
  KEY job_status_finished (job_name, status, finished_at),
  -- First start: each job's runs in progress (finished_at IS NULL).
  KEY job_open (job_name, finished_at, started_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

-- jobwatch serve only reads, unless it stores check-ins (store: mysql),
-- which needs INSERT and UPDATE too:
--   CREATE USER 'jobwatch'@'%' IDENTIFIED BY '...';
--   GRANT SELECT ON app.job_runs TO 'jobwatch'@'%';
--   GRANT PROCESS ON *.* TO 'jobwatch'@'%';  -- the watermark (docs/mysql.md#watermark)
