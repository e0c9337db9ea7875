#!/bin/sh
# The nginx service of deploy/compose.yaml: renders the shipped template deploy/nginx.conf
# (mounted at $NGINX_TEMPLATE) exactly as renderNginxConf in src/devnet/nginx.ts does, then runs
# nginx in the foreground on the result. test/compose.test.ts checks that both renderings agree.
#
#   NGINX_UPSTREAMS   `host:port` of every instance, separated by spaces (required)
#   NGINX_LISTEN      {{listen}}, default 80
#   NGINX_STATE_DIR   {{state_dir}}, default /var/cache/nginx (the official nginx image's)
#   NGINX_LOG_DIR     {{log_dir}}, default /var/log/nginx (linked to the container's output in
#                     the official nginx image)
#   NGINX_TEMPLATE    default /etc/payload-tools/nginx.conf
#   NGINX_CONF        where the rendered file goes, default /etc/nginx/payload-tools.conf
#   NGINX_RENDER_ONLY set to 1 to print the rendered file instead of running nginx
set -eu

template="${NGINX_TEMPLATE:-/etc/payload-tools/nginx.conf}"
conf="${NGINX_CONF:-/etc/nginx/payload-tools.conf}"
listen="${NGINX_LISTEN:-80}"
state_dir="${NGINX_STATE_DIR:-/var/cache/nginx}"
log_dir="${NGINX_LOG_DIR:-/var/log/nginx}"
: "${NGINX_UPSTREAMS:?NGINX_UPSTREAMS must list host:port of every instance}"

# A value is spliced into nginx syntax: refuse anything that could end a directive or a block.
for value in "$listen" "$state_dir" "$log_dir" $NGINX_UPSTREAMS; do
  case "$value" in
    *[!]A-Za-z0-9_.:/[-]*)
      echo "nginx-entrypoint: unsafe value \"$value\"" >&2
      exit 1
      ;;
  esac
done

# Placeholders named in comments are documentation, not slots; a line holding {{instance}} is
# repeated once per instance, in order.
render() {
  awk -v listen="$listen" -v state_dir="$state_dir" -v log_dir="$log_dir" \
    -v instances="$NGINX_UPSTREAMS" '
    { code = $0; sub(/#.*/, "", code) }
    code ~ /[{][{]instance[}][}]/ {
      n = split(instances, list, " ")
      for (i = 1; i <= n; i++) { line = $0; gsub(/[{][{]instance[}][}]/, list[i], line); print line }
      next
    }
    code ~ /[{][{]/ {
      line = $0
      gsub(/[{][{]listen[}][}]/, listen, line)
      gsub(/[{][{]state_dir[}][}]/, state_dir, line)
      gsub(/[{][{]log_dir[}][}]/, log_dir, line)
      rest = line; sub(/#.*/, "", rest)
      if (rest ~ /[{][{]/) { print "nginx-entrypoint: unknown placeholder in: " $0 > "/dev/stderr"; exit 1 }
      print line
      next
    }
    { print }
  ' "$template"
}

if [ "${NGINX_RENDER_ONLY:-}" = 1 ]; then
  render
  exit 0
fi
render >"$conf"
exec nginx -c "$conf" -g 'daemon off;'
