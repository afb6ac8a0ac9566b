# ragtap: the same install as scripts/setup.sh, in a slim image.  docker build -t ragtap . && docker run -p 8787:8787 ragtap
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md config.toml ./
COPY scripts ./scripts
COPY ragtap ./ragtap
RUN scripts/setup.sh && rm -rf /root/.cache/pip
# Inside a container the loopback default would make ragtap unreachable; the port is published explicitly.
ENV RAGTAP_HOST=0.0.0.0
EXPOSE 8787
ENTRYPOINT ["/app/.venv/bin/ragtap"]
CMD ["serve", "--config", "/app/config.toml"]
