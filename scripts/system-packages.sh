#!/usr/bin/env bash
# Install the Debian packages the test suite starts for real (idempotent; a second run only checks):
#   prometheus (promtool + the scrape/alert integration test), redis-server (scorer workers on Redis Streams),
#   postgresql (the capture store's PostgreSQL backend), chromium + chromium-driver (the triage page in a browser),
#   openssl (a throw-away certificate for the upstream client's TLS test).
# Installing a Debian service starts it system-wide; the tests start their own on free ports in temporary
# directories, so the system services are stopped again.
set -euo pipefail
need=()
command -v promtool >/dev/null 2>&1 && command -v prometheus >/dev/null 2>&1 || need+=(prometheus)
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v chromedriver >/dev/null 2>&1 || need+=(chromium-driver)
command -v openssl >/dev/null 2>&1 || need+=(openssl)
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
echo "installing Debian packages: ${need[*]}" >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
for service in prometheus redis-server postgresql; do
  ($SUDO systemctl stop "$service" 2>/dev/null || $SUDO service "$service" stop 2>/dev/null || true) >/dev/null 2>&1
done
