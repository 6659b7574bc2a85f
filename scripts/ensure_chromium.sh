#!/usr/bin/env bash
# Browser tests drive Debian's Chromium through Playwright's executablePath. Install it when we
# can (root with apt-get); otherwise the browser tests skip and say why.
set -u
browser=${CHROMIUM_PATH:-/usr/bin/chromium}
[ -x "$browser" ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "Installing Debian's chromium for the browser tests..."
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium fonts-dejavu-core) >/tmp/chromium-install.log 2>&1 \
    || { echo "chromium could not be installed (see /tmp/chromium-install.log); browser tests will skip."; exit 0; }
else
  echo "No chromium at $browser and no root apt-get: browser tests will skip. Install 'chromium' to run them."
fi
exit 0
