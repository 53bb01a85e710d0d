"""Running the pipeline: in-process stages (here) and, later, Spark. Only this package may import pyspark."""
