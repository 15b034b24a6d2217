"""A PySpark job as a user writes one: only the transformation (docs/your-pipeline.md).

The harness (``workload.app.pyspark``) reads the input topics with Spark's Kafka source and
calls ``transform(df)`` on the streaming DataFrame (columns key, value (binary), topic,
partition, offset, timestamp, timestampType); what it returns, with string or binary columns
``key`` and ``value``, goes to the output topic through Spark's Kafka sink, with a checkpoint.
This job copies each record: the value names its input (``output.match: value``).
"""


def transform(df):
    """Identity copy: key and value as strings."""
    return df.selectExpr("CAST(key AS STRING) AS key", "CAST(value AS STRING) AS value")
