"""The MPE judgment task's wording (Lai, Bisk and Hockenmaier 2017, Table 2), in plain Python.

Shared by the file rules (`importers.mpe`) and the judgment task (`validation`). The answers map
onto the three labels: yes = entailment, unknown = neutral, no = contradiction.
"""

from .labels import CONTRADICTION, ENTAILMENT, NEUTRAL

QUESTION = "Can the scene described by the four captions also be described by the proposed sentence?"
INSTRUCTIONS = (
    "We will show you four caption sentences that describe the same scene, and one proposed sentence. "
    "Your task is to decide whether or not the scene described by the four captions can also be "
    "described by the proposed sentence.\n\n"
    "The four captions were written by four different people. All four people were shown the same image, "
    "and then wrote a sentence describing the scene in this image. Therefore, there may be slight "
    "disagreements among the captions. The images are photographs from Flickr that show everyday scenes, "
    "activities, and events. You will not be given the image that the caption writers saw."
)
ANSWERS = {
    "yes": (
        ENTAILMENT,
        (
            "The scene described by the captions can definitely (or very probably) be described by the proposed "
            "sentence. The proposed sentence may leave out details that are mentioned in the captions. If the "
            "proposed sentence describes something that is not mentioned in the captions, it is probably safe to "
            "assume the extra information is true, given what you know from the captions. If there are "
            "disagreements among the captions about the details of the scene, the proposed sentence is consistent "
            "with at least one caption."
        ),
    ),
    "unknown": (
        NEUTRAL,
        (
            "There is not enough information to decide whether or not the scene described by the captions can "
            "be described by the proposed sentence. There may be scenes that can be described by the proposed "
            "sentence and the captions, but you don't know whether this is the case here."
        ),
    ),
    "no": (
        CONTRADICTION,
        (
            "The scene described by the captions can probably not be described by the proposed sentence. The "
            "proposed sentence and the captions either contradict each other or describe what appear to be two "
            "completely separate events."
        ),
    ),
}


# label -> the answer's word, in the task's order
ANSWER_FOR_LABEL = {label: answer for answer, (label, _) in ANSWERS.items()}
