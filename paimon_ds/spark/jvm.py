"""A classic session's JVM through py4j, at the cost of one round trip where py4j's own idiom costs dozens.
No pyspark import here (the session conf helper serves Spark Connect clients too).

py4j resolves `jvm.org.apache.spark.X` one segment at a time, and each segment that is a package is a failed
`Class.forName`, which searches every jar of Spark's classpath (~280): ~3 ms of the driver's CPU each.
A dotted name in one `getattr` is one lookup of a loaded class. Iterating a Java collection costs two calls per
element and ends with an exception, which PySpark converts through fourteen `is_instance_of` checks (two failed
class lookups each): a map comes over as one JSON string instead.
"""

from __future__ import annotations

import json
from typing import Any

JSON_MAPPER = "com.fasterxml.jackson.databind.ObjectMapper"  # Jackson, on every Spark classpath


def jvm_class(spark: Any, name: str) -> Any:
    """The JVM class ``name`` (fully qualified) of a classic session: its static members and constructors."""
    return getattr(spark._jvm, name)


def java_map(spark: Any, jmap: Any) -> dict[str, Any]:
    """A java.util.Map of a classic session's JVM as a dict, in one round trip (JSON)."""
    return json.loads(jvm_class(spark, JSON_MAPPER)().writeValueAsString(jmap))


def session_conf(spark: Any) -> dict[str, str]:
    """Every entry of a session's conf (classic or Spark Connect)."""
    jconf = getattr(spark.conf, "_jconf", None)  # classic: the JVM's RuntimeConfig
    if jconf is None:
        return dict(spark.conf.getAll)  # Spark Connect: one request
    return java_map(spark, jconf.getAllAsJava())


def scala_seq(spark: Any, items: list[Any]) -> Any:
    """A Scala Seq of the JVM objects ``items``."""
    java_list = jvm_class(spark, "java.util.ArrayList")()
    for item in items:
        java_list.add(item)
    return jvm_class(spark, "scala.jdk.javaapi.CollectionConverters").asScala(java_list).toSeq()
