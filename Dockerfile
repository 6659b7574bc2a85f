# One image for the web site and the Celery workers.
# GPU nodes build with a CUDA build of torch 2.13.0:
#   docker compose build --build-arg TORCH_INDEX_URL=https://download.pytorch.org/whl/cu128 gpu-worker
FROM python:3.11-slim

ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
# gunicorn reads gunicorn.conf.py; in a container it listens on every interface of the container's
# network (compose publishes no port of it: only the proxy reaches it).
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 DATA_DIR=/data STATIC_ROOT=/app/var/static \
    GUNICORN_BIND=0.0.0.0:8000

WORKDIR /app
COPY requirements.txt requirements-nodeps.txt ./
RUN pip install --no-cache-dir --extra-index-url "$TORCH_INDEX_URL" -r requirements.txt \
 && pip install --no-cache-dir --no-deps -r requirements-nodeps.txt
COPY . .
# Static files are collected into the image, as production serves them (WhiteNoise, from the app):
# STATIC_MANIFEST=1 writes the hashed, compressed names and their manifest that the production
# settings (DEBUG off) ask for; DEBUG=1 only because the build has no SECRET_KEY and needs none.
RUN STATIC_MANIFEST=1 DEBUG=1 python manage.py collectstatic --noinput >/dev/null \
 && useradd --system --uid 10001 --home-dir /app app \
 && mkdir -p /data && chown app /data
# The app runs as a user without privileges; /data (snapshots, checkpoints) is theirs.
USER app

EXPOSE 8000
CMD ["gunicorn", "annotation_site.wsgi", "-c", "gunicorn.conf.py"]
