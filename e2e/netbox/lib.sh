# Shared by e2e/netbox/setup and e2e/netbox/stop (sourced, not run).
# shellcheck shell=bash

NBX_CACHE=${NETBOX_E2E_CACHE:-/var/cache/netbox-plugin-bridge}
NBX_STATE=${NETBOX_E2E_STATE:-/tmp/netbox-e2e}

nbx_log() { printf 'setup: %s\n' "$*" >&2; }
nbx_die() { printf 'setup: error: %s\n' "$*" >&2; exit 1; }

# nbx_mounts_under DIR: the mount points at or below DIR, deepest first.
nbx_mounts_under() {
	local dir
	dir=$(realpath -m -- "$1")
	# /proc/self/mounts escapes spaces as \040; our paths have none.
	awk -v d="$dir" '$2 == d || index($2, d "/") == 1 { print $2 }' /proc/self/mounts | sort -r
}

# nbx_umount_all DIR: unmount everything mounted at or below DIR; fail if anything stays.
nbx_umount_all() {
	local dir=$1 m left
	for m in $(nbx_mounts_under "$dir"); do
		umount "$m" 2>/dev/null || umount -l "$m" || true
	done
	left=$(nbx_mounts_under "$dir")
	[ -z "$left" ] || nbx_die "still mounted under $dir: $left"
}

# nbx_safe_rm DIR: delete a directory tree that may once have had host mounts in it.
# Refuses while anything is mounted below it, and never crosses into another file system.
nbx_safe_rm() {
	local dir=$1
	[ -e "$dir" ] || return 0
	case $(realpath -m -- "$dir") in
	/ | /proc* | /dev* | /sys* | /run | /tmp | /var | /var/cache | /usr* | /etc* | /root | /home)
		nbx_die "refusing to delete $dir" ;;
	esac
	nbx_umount_all "$dir"
	rm -rf --one-file-system -- "$dir"
}

# nbx_group_alive PGID: some process of the group is running (zombies, which only wait
# for their parent to reap them, do not count).
nbx_group_alive() {
	ps -e -o pgid=,stat= | awk -v g="$1" '$1 == g && $2 !~ /^Z/ { found = 1 } END { exit !found }'
}

# nbx_kill_groups PIDFILE...: stop the process groups whose leaders' pids are in the files,
# then remove the files. SIGINT first (gunicorn's and Redis's quick shutdown; RQ's warm
# one), SIGKILL after 3 s: nothing here holds data worth a graceful exit, since every
# setup restores the database and Redis keeps none.
nbx_kill_groups() {
	local f pid pids=() i alive
	for f in "$@"; do
		[ -f "$f" ] || continue
		pid=$(cat "$f" 2>/dev/null || true)
		rm -f "$f"
		case $pid in '' | *[!0-9]*) continue ;; esac
		kill -0 "$pid" 2>/dev/null || continue
		pids+=("$pid")
		kill -INT -- "-$pid" 2>/dev/null || kill -INT "$pid" 2>/dev/null || true
	done
	[ ${#pids[@]} -gt 0 ] || return 0
	for i in $(seq 1 80); do
		alive=0
		for pid in "${pids[@]}"; do
			if nbx_group_alive "$pid"; then alive=1; fi
		done
		[ $alive = 1 ] || return 0
		# A second SIGINT turns RQ's warm shutdown into a cold one.
		[ "$i" != 5 ] || for pid in "${pids[@]}"; do
			kill -INT -- "-$pid" 2>/dev/null || true
		done
		[ "$i" != 30 ] || for pid in "${pids[@]}"; do
			kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
		done
		sleep 0.1
	done
}

# nbx_stop_all: stop every process a previous setup started and unmount what it mounted.
nbx_stop_all() {
	local root="" f pgdata pgbin
	[ -f "$NBX_STATE/root" ] && root=$(cat "$NBX_STATE/root")
	# NetBox first (its processes stall without Redis), then Redis, then PostgreSQL.
	nbx_kill_groups "$NBX_STATE"/pids/web-*.pid "$NBX_STATE"/pids/rqworker.pid
	nbx_kill_groups "$NBX_STATE"/pids/*.pid
	if [ -n "$root" ] && [ -d "$root" ]; then
		pgdata=$root/var/lib/nbx-e2e/pgdata
		if [ -f "$pgdata/postmaster.pid" ]; then
			pgbin=$(ls -d "$root"/usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
			pgbin=${pgbin#"$root"}
			chroot --userspec="$(awk -F: '$1 == "postgres" { print $3 ":" $4 }' "$root/etc/passwd")" \
				"$root" "$pgbin/pg_ctl" -D /var/lib/nbx-e2e/pgdata \
				-m fast -w -t 30 stop >/dev/null 2>&1 || true
		fi
		nbx_umount_all "$root"
	fi
	# A root that failed half-way through being built may still have /proc mounted.
	for root in "$NBX_CACHE"/root-*.tmp; do
		[ -d "$root" ] && nbx_umount_all "$root"
	done
	rm -f "$NBX_STATE/root"
}
