# Sourced by the scripts that make real outputs (gen-outputs.sh, gen-real-outputs.sh):
# have CMD [DEBIAN-PACKAGE] is true when CMD runs, installing the package first if it can
# (apt-get, updated once a run). The sourcing script defines log.
APT_UPDATED=
have() {
	command -v "$1" >/dev/null 2>&1 && return 0
	[[ -n "${2:-}" ]] || return 1
	command -v apt-get >/dev/null 2>&1 || return 1
	if [[ -z "$APT_UPDATED" ]]; then
		apt-get update -q >/dev/null 2>&1 || true
		APT_UPDATED=1
	fi
	log "installing $2"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$2" >/dev/null 2>&1 || return 1
	command -v "$1" >/dev/null 2>&1
}
