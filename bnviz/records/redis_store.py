"""The shared job store: Redis, for web servers and Celery workers on several machines."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import asdict
from typing import Any

from bnviz.records import job as records
from bnviz.records.job import ACTIVE, FIELDS, REUSABLE, STATUSES, Job, StoreError
from bnviz.records.jobstore import JobStore

__all__ = ["RedisStore"]

_CAS_LUA = """
local status = redis.call('HGET', KEYS[1], 'status')
if not status then return 0 end
local n = tonumber(ARGV[1])
local ok = false
for i = 2, n + 1 do if status == ARGV[i] then ok = true end end
if not ok then return 0 end
for i = n + 2, #ARGV, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
return 1
"""
_UPDATE_LUA = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
for i = 1, #ARGV, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
return 1
"""
# KEYS: the new job's hash, the sorted set of jobs, the set of the key's jobs.
# ARGV: job id, created, limit (-1: none), prefix of job hashes, reusable statuses (JSON,
# comma-separated), active statuses (likewise), reuse (1/0), client (JSON, '' for none),
# client limit (-1: none), count of ids to skip, those ids, then the new job's field/value
# pairs. Returns {id that stands or '', active count, the client's active count}.
_INSERT_UNLESS_LUA = """
local prefix = ARGV[4]
local reusable, active_set = {}, {}
for s in string.gmatch(ARGV[5], '[^,]+') do reusable[s] = true end
for s in string.gmatch(ARGV[6], '[^,]+') do active_set[s] = true end
local client, client_limit = ARGV[8], tonumber(ARGV[9])
local nskip = tonumber(ARGV[10])
local skip = {}
for i = 11, 10 + nskip do skip[ARGV[i]] = true end
if ARGV[7] == '1' then
  local newest, newest_time = nil, nil
  for _, id in ipairs(redis.call('SMEMBERS', KEYS[3])) do
    local v = redis.call('HMGET', prefix .. id, 'status', 'cancel_requested', 'created')
    if v[1] and reusable[v[1]] and v[2] ~= 'true' and not skip[id] then
      local t = tonumber(v[3])
      if newest == nil or t > newest_time then newest, newest_time = id, t end
    end
  end
  if newest then return {newest, -1, -1} end
end
local active, mine = 0, 0
for _, id in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do
  local v = redis.call('HMGET', prefix .. id, 'status', 'client')
  if v[1] and active_set[v[1]] then
    active = active + 1
    if client ~= '' and v[2] == client then mine = mine + 1 end
  end
end
local limit = tonumber(ARGV[3])
if (limit >= 0 and active >= limit) or (client ~= '' and client_limit >= 0 and
    mine >= client_limit) then return {'', active, mine} end
for i = 11 + nskip, #ARGV, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
redis.call('ZADD', KEYS[2], tonumber(ARGV[2]), ARGV[1])
redis.call('SADD', KEYS[3], ARGV[1])
return {ARGV[1], active, mine}
"""
#: Jobs are read this many at a time when a status is looked for among all of them.
_PAGE = 500


class RedisStore(JobStore):
    """Jobs in Redis, shared by every web server and Celery worker: a hash per job (fields as
    JSON), a sorted set of ids by creation time, a set of ids per key, and a list each of
    metrics and log lines."""

    PREFIX = "bnviz"

    def __init__(self, url: str):
        import redis

        self.url = url
        self._redis = redis.Redis.from_url(url, socket_timeout=10, socket_connect_timeout=5)
        self._cas_script = self._redis.register_script(_CAS_LUA)
        self._update_script = self._redis.register_script(_UPDATE_LUA)
        self._insert_unless_script = self._redis.register_script(_INSERT_UNLESS_LUA)

    def _key(self, job_id: str, part: str = "") -> str:
        return f"{self.PREFIX}:job:{job_id}{':' + part if part else ''}"

    def _key_set(self, key: str | None) -> str:
        return f"{self.PREFIX}:key:{key or ''}"

    def _call(self, fn, *args, **kwargs):
        import redis

        try:
            return fn(*args, **kwargs)
        except redis.RedisError as exc:
            raise StoreError(f"job store {self.url}: {exc}") from None

    @staticmethod
    def _flat(values: dict[str, Any]) -> list[str]:
        return [x for k, v in values.items() for x in (k, json.dumps(v))]

    def _insert(self, job: Job) -> None:
        pipe = self._redis.pipeline()
        pipe.hset(self._key(job.id), mapping={k: json.dumps(v) for k, v in asdict(job).items()})
        pipe.zadd(f"{self.PREFIX}:jobs", {job.id: job.created})
        if job.key:
            pipe.sadd(self._key_set(job.key), job.id)
        self._call(pipe.execute)

    def _insert_unless(self, job: Job, skip: tuple[str, ...], limit: int | None,
                       reuse: bool = True, client_limit: int | None = None
                       ) -> tuple[str, int, int]:
        args = [job.id, job.created, -1 if limit is None else int(limit), self._key(""),
                ",".join(json.dumps(s) for s in REUSABLE),
                ",".join(json.dumps(s) for s in ACTIVE), "1" if reuse else "0",
                json.dumps(job.client) if job.client else "",
                -1 if client_limit is None else int(client_limit), len(skip), *skip,
                *self._flat(asdict(job))]
        found, active, mine = self._call(self._insert_unless_script, args=args, keys=[
            self._key(job.id), f"{self.PREFIX}:jobs", self._key_set(job.key)])
        return (found.decode() if isinstance(found, bytes) else found), int(active), int(mine)

    def _decode(self, raw: dict[bytes, bytes]) -> Job:
        values = {k.decode(): json.loads(v) for k, v in raw.items()}
        return Job(**{k: v for k, v in values.items() if k in FIELDS})

    def get(self, job_id: str) -> Job | None:
        raw = self._call(self._redis.hgetall, self._key(job_id))
        return self._decode(raw) if raw else None

    def _get_many(self, ids: list[bytes]) -> list[Job]:
        pipe = self._redis.pipeline()
        for job_id in ids:
            pipe.hgetall(self._key(job_id.decode()))
        return [self._decode(raw) for raw in self._call(pipe.execute) if raw]

    def list(self, limit: int = 200) -> list[Job]:
        ids = self._call(self._redis.zrevrange, f"{self.PREFIX}:jobs", 0, int(limit) - 1)
        return self._get_many(ids)

    def find(self, key: str, limit: int = 20) -> list[Job]:
        jobs = self._get_many(list(self._call(self._redis.smembers, self._key_set(key))))
        return sorted(jobs, key=lambda j: j.created, reverse=True)[:limit]

    def _statuses(self) -> Iterator[tuple[bytes, str]]:
        """(id, status) of every job, oldest first, read a page at a time."""
        start = 0
        while True:
            ids = self._call(self._redis.zrange, f"{self.PREFIX}:jobs", start,
                             start + _PAGE - 1)
            if not ids:
                return
            pipe = self._redis.pipeline()
            for job_id in ids:
                pipe.hget(self._key(job_id.decode()), "status")
            for job_id, status in zip(ids, self._call(pipe.execute), strict=True):
                if status is not None:
                    yield job_id, json.loads(status)
            start += _PAGE

    def with_status(self, status: str, limit: int | None = None) -> list[Job]:
        ids = []
        for job_id, found in self._statuses():
            if found == status:
                ids.append(job_id)
                if limit is not None and len(ids) >= limit:
                    break
        return self._get_many(ids)

    def counts(self) -> dict[str, int]:
        out = dict.fromkeys(STATUSES, 0)
        for _, status in self._statuses():
            out[status] = out.get(status, 0) + 1
        return out

    def _cas(self, job_id: str, allowed: tuple[str, ...], status: str,
             values: dict[str, Any]) -> bool:
        args = [len(allowed), *(json.dumps(a) for a in allowed),
                *self._flat({"status": status, **values})]
        return bool(self._call(self._cas_script, keys=[self._key(job_id)], args=args))

    def update(self, job_id: str, **values: Any) -> None:
        if set(values) - set(FIELDS) or {"id", "status"} & set(values):
            raise ValueError(f"cannot update {sorted(values)}")
        self._call(self._update_script, keys=[self._key(job_id)], args=self._flat(values))

    def add_metric(self, job_id: str, row: dict[str, Any]) -> None:
        self._call(self._redis.rpush, self._key(job_id, "metrics"), json.dumps(row))

    def metrics(self, job_id: str) -> list[dict[str, Any]]:
        return [json.loads(r) for r in
                self._call(self._redis.lrange, self._key(job_id, "metrics"), 0, -1)]

    def truncate_metrics(self, job_id: str, keep: int) -> None:
        key = self._key(job_id, "metrics")
        if keep <= 0:
            self._call(self._redis.delete, key)
        else:
            self._call(self._redis.ltrim, key, 0, int(keep) - 1)

    def add_log(self, job_id: str, line: str) -> None:
        pipe = self._redis.pipeline()
        pipe.rpush(self._key(job_id, "log"), line)
        pipe.ltrim(self._key(job_id, "log"), -records.MAX_LOG_LINES, -1)
        self._call(pipe.execute)

    def logs(self, job_id: str, tail: int = 200) -> list[str]:
        if tail <= 0:
            return []
        return [r.decode() for r in
                self._call(self._redis.lrange, self._key(job_id, "log"), -int(tail), -1)]

    def ping(self) -> bool:
        try:
            return bool(self._call(self._redis.ping))
        except StoreError:
            return False

    def beat_worker(self, name: str, info: dict[str, Any]) -> None:
        now = time.time()
        self._call(self._redis.hset, f"{self.PREFIX}:workers", name,
                   json.dumps({**info, "time": now}))

    def workers(self) -> dict[str, dict[str, Any]]:
        raw = self._call(self._redis.hgetall, f"{self.PREFIX}:workers")
        now, out = time.time(), {}
        for name, value in raw.items():
            info = json.loads(value)
            if now - info.get("time", 0) < 86_400:  # a day silent: gone for good
                out[name.decode()] = info
        return out
