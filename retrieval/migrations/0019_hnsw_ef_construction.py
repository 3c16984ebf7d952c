# The HNSW index adds each vector with ef_construction 128 (was 64): the graph a walk follows is
# built from twice as many candidates per insert, and a walk of the same ef_search finds more of
# the true nearest chunks. ALTER INDEX ... SET changes it for every vector added from now on
# without rebuilding the index (a rebuild would block writes for minutes at a million chunks);
# `REINDEX INDEX CONCURRENTLY chunk_embedding_hnsw` rebuilds the older part while writes go on
# (docs/operating.md, "Upgrading").

import pgvector.django.indexes
from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('retrieval', '0018_lanes_pending_index'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(
                    'ALTER INDEX chunk_embedding_hnsw SET (ef_construction = 128)',
                    'ALTER INDEX chunk_embedding_hnsw SET (ef_construction = 64)',
                ),
            ],
            state_operations=[
                migrations.RemoveIndex(model_name='chunk', name='chunk_embedding_hnsw'),
                migrations.AddIndex(
                    model_name='chunk',
                    index=pgvector.django.indexes.HnswIndex(
                        ef_construction=128,
                        fields=['embedding'],
                        m=16,
                        name='chunk_embedding_hnsw',
                        opclasses=['halfvec_cosine_ops'],
                    ),
                ),
            ],
        ),
    ]
