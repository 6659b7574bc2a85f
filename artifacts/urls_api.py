from django.urls import path

from .api import GiveawayWordsView, TagFiguresView

urlpatterns = [
    path("tags/", TagFiguresView.as_view(), name="artifacts-tags"),
    path("giveaway-words/", GiveawayWordsView.as_view(), name="artifacts-giveaway-words"),
]
